"""Where a claim holds: two claims for different environments, platforms, places of one
tree or subcommands are about different scopes, not opposite claims ("staging uses 2
replicas" / "production uses 6"), and neither is a default against a scope's own setting.
Pure."""

from __future__ import annotations

import functools
import re

from knowledge.reading import Words, stem, word_set

# Words that name where a claim holds: two claims for different ones of these are about
# different scopes, not opposite claims.
# Each kind names alternatives of one another: another environment is another scope, but an
# environment beside a platform is no other scope of the same thing ("the nightly import
# writes to ..." says nothing of where reads go).
SCOPE_KINDS = [
    "staging stage production prod dev development test testing qa ci local preview sandbox "
    "canary live beta alpha nightly",
    "ios android web mobile desktop",
    "linux windows macos mac darwin",
    "arm arm64 x86 amd64",
    "server client frontend backend",
    "admin internal external public private",
    "read write reads writes",
    "primary replica leader follower",
    "eu us asia",
    "weekday weekend weekdays weekends night day monday tuesday wednesday thursday friday "
    "saturday sunday",
]
SCOPES = frozenset(word for kind in SCOPE_KINDS for word in kind.split())


SCOPE_STEMS = frozenset(stem(word) for word in SCOPES)


# Spellings of the same scope.
_SAME_SCOPE = {
    "prod": "production",
    "stage": "staging",
    "stag": "staging",
    "dev": "development",
    "develop": "development",
    "testing": "test",
    "mac": "macos",
    "darwin": "macos",
    "amd64": "x86",
    "arm64": "arm",
    "read": "reads",
    "write": "writes",
}


# The scopes of each kind, as ``_scopes`` spells them.
_KINDS = [
    frozenset(_SAME_SCOPE.get(stem(word), stem(word)) for word in kind.split())
    for kind in SCOPE_KINDS
]


_USUAL = frozenset(stem(word) for word in word_set("default normal normally usual usually"))


def _scopes(words: Words) -> set[str]:
    return {_SAME_SCOPE.get(word, word) for word in words.content & SCOPE_STEMS}


def other_scope(a: Words, b: Words, *, times: bool = True, places: bool = True) -> bool:
    """Whether the two speak of different scopes: another environment, platform or path, or
    a default against a scope's own setting. ``times``: days and times of day count as
    scopes (not when schedules are what is compared); ``places``: so do paths and commands
    (not when where a tool's files go is beside what it is)."""
    scopes_a, scopes_b = _scopes(a), _scopes(b)
    if not times:
        scopes_a, scopes_b = scopes_a - TIME_SCOPES, scopes_b - TIME_SCOPES
    if scopes_a - scopes_b and scopes_b - scopes_a:
        for kind in _KINDS:
            if (scopes_a & kind) - scopes_b and (scopes_b & kind) - scopes_a:
                return True
    # the usual case against a scope's own ("by default", "in normal operation" / "factory
    # test builds")
    if (scopes_a ^ scopes_b) and _USUAL & (a.content | b.content):
        return True
    if not places:
        return False
    only_a, only_b = a.content - b.content, b.content - a.content
    # A place spelled otherwise on each side ("rate-limits.md" / "rate_limits.md") is the
    # same place: how to spell it may be the very thing they disagree on.
    both = {_spelling(t) for t in only_a if "/" in t} & {_spelling(t) for t in only_b if "/" in t}
    # Other places of one tree (src/api/ and src/web/, packages @acme/api and @acme/web);
    # "Party.join/2" is no place, nor a scoped package the other names without its scope
    # ("@supabase/supabase-js" / "supabase-js").
    paths_a = {
        t.split("/")[0]
        for t in only_a
        if "/" in t.strip("/") and _place(t, a.text, b) and _spelling(t) not in both
    }
    paths_b = {
        t.split("/")[0]
        for t in only_b
        if "/" in t.strip("/") and _place(t, b.text, a) and _spelling(t) not in both
    }
    if paths_a & paths_b:
        return True
    # Another command or code named on each side (`tool deploy` / `tool rollback`).
    code_a, code_b = _code(a.text), _code(b.text)
    return bool(code_a and code_b and code_a.isdisjoint(code_b) and _commands(code_a, code_b))


@functools.lru_cache(maxsize=4096)
def _code(text: str) -> frozenset[str]:
    """The code spans of a text; one with its arguments elided ("where(account_id: ...)")
    says any arguments, so it is no other command."""
    return frozenset(
        code for code in _CODE.findall(text) if "..." not in code and "\u2026" not in code
    )


_CODE = re.compile(r"`([^`]+)`")


TIME_SCOPES = frozenset(
    stem(word)
    for word in word_set(
        "weekday weekend weekdays weekends night day monday tuesday wednesday thursday "
        "friday saturday sunday"
    )
)


def _spelling(token: str) -> str:
    """A name with its word separators left out: "rate_limits" and "rate-limits" meet."""
    return re.sub(r"[-_]", "", token)


def _place(token: str, text: str, other: Words) -> bool:
    """A path to a file or a folder, not a name with a slash (an arity, a fraction, a
    package in its scope, "@scope/name" in ``text``, that ``other`` names as "name")."""
    last = token.rstrip("/").rsplit("/", 1)[-1]
    scoped = f"@{token}" in text.lower() and last in other.content
    return bool(last) and not last.isdigit() and not scoped


def _commands(code_a: frozenset[str], code_b: frozenset[str]) -> bool:
    """Two sets of code spans that name the same program with other subcommands (a
    setting given two values, `required_version = "~> 1.5"`, is one thing)."""
    return bool(_heads(code_a) & _heads(code_b))


def _heads(code: frozenset[str]) -> set[str]:
    return {
        words[0]
        for words in map(str.split, code)
        if len(words) > 1
        and not words[0].endswith(":")  # a setting (`version: 2`), not a command
        and (words[1][:1].isalnum() or words[1][:1] == "-")
    }
