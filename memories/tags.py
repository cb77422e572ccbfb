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
from dataclasses import dataclass

_WILDCARDS = frozenset("*?")
# How complex a glob may be. Matching cost grows with the wildcards a pattern holds (each
# ``**`` may stand for any number of segments), so a pattern holds at most so many; a run of
# ``**/`` segments says what one does and counts once.
MAX_DOUBLE_STARS = 4
MAX_WILDCARDS = 12
_STARS = re.compile(r"\*{3,}")
_DOUBLE_STAR_RUN = re.compile(r"(?:\*\*/)+")
_TRAILING_RUN = re.compile(r"(?:\*\*/)+\*\*(?![^/])")
_WILDCARD = re.compile(r"\*\*|\*|\?")
_REGEX_SPECIAL = frozenset(".^$+(){}|\\[]*?")


def is_glob(value: str) -> bool:
    return any(ch in _WILDCARDS for ch in value)


def is_path_pattern(tag: str) -> bool:
    return "/" in tag or is_glob(tag)


def _escape(ch: str) -> str:
    return "\\" + ch if ch in _REGEX_SPECIAL else ch


def collapsed(pattern: str) -> str:
    """The glob with each run of ``**`` segments (``**/**/``, ``****``) written once: it
    matches exactly the same paths."""
    pattern = _STARS.sub("**", pattern)
    pattern = _DOUBLE_STAR_RUN.sub("**/", pattern)
    return _TRAILING_RUN.sub("**", pattern)


def glob_problem(pattern: str) -> str | None:
    """Why a glob is too complex to match safely (its wildcards past the limits), or None."""
    if not is_glob(pattern):
        return None
    simple = collapsed(pattern)
    doubles = simple.count("**")
    if doubles > MAX_DOUBLE_STARS:
        return (
            f"Pattern {pattern[:40]!r}{'...' if len(pattern) > 40 else ''} holds {doubles}"
            f" separate '**'; the limit is {MAX_DOUBLE_STARS}."
        )
    wildcards = len(_WILDCARD.findall(simple))
    if wildcards > MAX_WILDCARDS:
        return (
            f"Pattern {pattern[:40]!r}{'...' if len(pattern) > 40 else ''} holds {wildcards}"
            f" wildcards; the limit is {MAX_WILDCARDS}."
        )
    return None


def glob_to_regex(pattern: str) -> str:
    """An anchored regex for a path glob (``*``, ``?``, ``**``)."""
    pattern = collapsed(_normalized(pattern))
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


# The glob's pieces for glob_matches: a literal character, or one of these.
_ONE, _SEGMENT, _ANYTHING, _DIRECTORIES = "?", "*", "**", "**/"


def _glob_pieces(pattern: str) -> list[str]:
    pieces: list[str] = []
    i = 0
    while i < len(pattern):
        for piece in (_DIRECTORIES, _ANYTHING, _SEGMENT, _ONE):
            if pattern.startswith(piece, i):
                pieces.append(piece)
                i += len(piece)
                break
        else:
            pieces.append(pattern[i])
            i += 1
    return pieces


def glob_matches(pattern: str, path: str) -> bool:
    """Whether ``path`` matches the glob exactly as ``glob_to_regex`` says, in time linear in
    the path (all the places the pattern can be in are followed at once, never backtracked):
    Python's regex engine backtracks, and a glob such as ``**/*a*a*a*a*a*b`` against a long
    path would keep a worker busy for minutes."""
    pattern = collapsed(_normalized(pattern))
    if pattern.endswith("/"):
        pattern += "**"
    if not is_glob(pattern):
        return path == pattern or path.startswith(pattern + "/")
    pieces = _glob_pieces(pattern)
    end = len(pieces)
    # A state is the index of the next piece to match; a ``**/`` already under way (it has
    # read characters but not yet the ``/`` that ends them) is its index negated, minus one.

    def closure(states: set[int]) -> set[int]:
        # A repeating piece not yet under way may match nothing: the next one is reachable.
        stack, seen = list(states), set(states)
        while stack:
            state = stack.pop()
            skippable = 0 <= state < end and pieces[state] in (_SEGMENT, _ANYTHING, _DIRECTORIES)
            if skippable and state + 1 not in seen:
                seen.add(state + 1)
                stack.append(state + 1)
        return seen

    states = closure({0})
    for ch in path:
        following: set[int] = set()
        for state in states:
            if state < 0 or (state < end and pieces[state] == _DIRECTORIES):
                index = -state - 1 if state < 0 else state
                if ch == "/":
                    following.add(index + 1)  # the directories end here
                following.add(-index - 1)  # or go on
                continue
            if state == end:
                continue
            piece = pieces[state]
            if piece == _ANYTHING or (piece == _SEGMENT and ch != "/"):
                following.add(state)
            elif (piece == _ONE and ch != "/") or piece == ch:
                following.add(state + 1)
        if not following:
            return False
        states = closure(following)
    return end in states


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
    """Python statement of the rule the selection query applies in SQL (globs matched by
    glob_matches, in linear time)."""
    scope = list(write_scope)
    if is_path_pattern(tag):
        if any(glob_matches(tag, entry) for entry in scope):
            return True
    else:
        keyword = re.compile(keyword_to_regex(tag))
        if any(keyword.search(entry) for entry in scope):
            return True
    return any(glob_matches(entry, tag) for entry in scope if is_glob(entry))


# --- match keys: the rule above, looked up through an index ----------------------------------
#
# Each memory stores literal keys derived from its tags; a write scope yields probe keys of
# two kinds. An **exact** probe key that a memory has proves a match: keywords (``kw:``),
# plain paths (``path:``), directory globs like ``src/core/**`` (``tree:``) and, for a
# scope glob of that form, the directories the tags name (``lit:``). A **candidate** probe
# key only narrows the search (``dir:`` for other tag globs, ``lit:`` for other scope globs):
# the exact regexes decide. Whenever a tag matches a scope entry, one of the tag's keys is
# among the entry's probe keys, so a GIN index on the keys finds every match. A scope glob
# with no literal directory (``*.py``, ``**/x``) can match any tag: ``probe_keys`` then
# reports the scope as unanchored, and only the regexes can tell.


@dataclass(frozen=True)
class Probe:
    exact: list[str]
    candidate: list[str]
    anchored: bool


def _glob_directory(pattern: str) -> str:
    """The literal directory a glob's matches all start with (``src/a/`` for ``src/a/*.py``)."""
    first = min((pattern.index(ch) for ch in _WILDCARDS if ch in pattern), default=len(pattern))
    literal = pattern[:first]
    return literal[: literal.rfind("/") + 1]


def _tree_root(pattern: str) -> str | None:
    """``src/core/`` for ``src/core/**`` or ``src/core/``: everything below a literal directory."""
    root = pattern[:-2] if pattern.endswith("/**") else pattern
    if root.endswith("/") and not is_glob(root):
        return root
    return None


def _normalized(pattern: str) -> str:
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return pattern


def tag_keys(tags: Iterable[str]) -> list[str]:
    keys: set[str] = set()
    for tag in tags:
        if not is_path_pattern(tag):
            keys.add("kw:" + tag.strip().lower())
            continue
        pattern = _normalized(tag)
        tree = _tree_root(pattern)
        if tree is not None:
            keys.add("tree:" + tree)
        elif is_glob(pattern):
            keys.add("dir:" + _glob_directory(pattern))
        else:
            keys.add("path:" + pattern)
        # A scope glob is matched against the tag as written: key each directory it names.
        keys.update("lit:" + tag[: i + 1] for i, ch in enumerate(tag) if ch == "/")
    return sorted(keys)


def probe_keys(write_scope: Iterable[str]) -> Probe:
    """The keys to look memories up by for ``write_scope`` (see above)."""
    exact: set[str] = set()
    candidate: set[str] = {"dir:"}
    anchored = True
    for entry in write_scope:
        for i, ch in enumerate(entry):
            if ch == "/":
                exact.add("path:" + entry[:i])
                exact.add("tree:" + entry[: i + 1])
                candidate.add("dir:" + entry[: i + 1])
        exact.add("path:" + entry)
        for segment in entry.lower().split("/"):
            exact.add("kw:" + segment)
            exact.update("kw:" + segment[:j] for j, ch in enumerate(segment) if ch == ".")
        if is_glob(entry):
            pattern = _normalized(entry)
            tree = _tree_root(pattern)
            directory = _glob_directory(pattern)
            if tree is not None:
                exact.add("lit:" + tree)
            elif directory:
                candidate.add("lit:" + directory)
            else:
                anchored = False
    return Probe(sorted(exact), sorted(candidate - exact), anchored)
