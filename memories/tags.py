"""How a memory's tags match a task's write scope.

A tag is one of two kinds:

* a **path pattern**: it contains ``/`` or a wildcard. ``*`` matches within one
  path segment, ``?`` one character of a segment, ``**`` any number of segments
  (``src/**/test_*.py`` matches ``src/test_a.py`` and ``src/a/b/test_c.py``).
  A path with no wildcard matches itself and everything below it
  (``src/core`` matches ``src/core/a.py``); a trailing ``/`` means the same.
* a **keyword** (no ``/``, no wildcard): it matches a scope path one of whose
  segments equals it, or whose file name without extension equals it, ignoring
  case (``auth`` matches ``src/auth/login.py``; ``login`` matches it too).

A scope entry may itself be a glob (``src/core/**``): it matches a tag when the
tag's pattern matches the entry taken literally, or the entry's glob matches the
tag taken literally.

Patterns are compiled to anchored regular expressions in the subset that both
Python's ``re`` and PostgreSQL's ARE agree on, so the database selects with the
same rule this module states; the regexes are stored beside the tags.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_WILDCARDS = frozenset("*?")
_REGEX_SPECIAL = frozenset(".^$+(){}|\\[]*?")


def is_glob(value: str) -> bool:
    return any(ch in _WILDCARDS for ch in value)


def is_path_pattern(tag: str) -> bool:
    return "/" in tag or is_glob(tag)


def _escape(ch: str) -> str:
    return "\\" + ch if ch in _REGEX_SPECIAL else ch


def glob_to_regex(pattern: str) -> str:
    """An anchored regex for a path glob (``*``, ``?``, ``**``)."""
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if pattern.endswith("/"):
        pattern += "**"
    parts: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            parts.append("(.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            parts.append(".*")
            i += 2
        elif ch == "*":
            parts.append("[^/]*")
            i += 1
        elif ch == "?":
            parts.append("[^/]")
            i += 1
        else:
            parts.append(_escape(ch))
            i += 1
    body = "".join(parts)
    if not is_glob(pattern):
        # A plain path matches itself and everything below it.
        body += "(/.*)?"
    return f"^{body}$"


def keyword_to_regex(keyword: str) -> str:
    body = "".join(_escape(ch) for ch in keyword.strip())
    return f"(?i)(^|/){body}(\\.[^/]*)?(/|$)"


def tag_to_regex(tag: str) -> str:
    return glob_to_regex(tag) if is_path_pattern(tag) else keyword_to_regex(tag)


def tag_patterns(tags: Iterable[str]) -> list[str]:
    return [tag_to_regex(tag) for tag in tags]


def scope_patterns(write_scope: Iterable[str]) -> list[str]:
    """Regexes for the scope entries that are globs (matched against tags taken literally)."""
    return [glob_to_regex(entry) for entry in write_scope if is_glob(entry)]


def tag_matches_scope(tag: str, write_scope: Iterable[str]) -> bool:
    """Python statement of the rule the selection query applies in SQL."""
    scope = list(write_scope)
    tag_regex = re.compile(tag_to_regex(tag))
    if any(tag_regex.search(entry) for entry in scope):
        return True
    return any(re.search(pattern, tag) for pattern in scope_patterns(scope))
