"""How well a memory's tags fit a task's write scope, graded (pure).

Matches still come first (the seed's rule); among them a memory ranks higher the more of
the write scope it covers and the more specific its matching tags are: the very path beats
a deep directory (``src/pkg/sub/**``), which beats a shallow one (``src/**``), which beats
a bare keyword. A tag's specificity for a path is the share of the path's segments its
literal part names; the grade is the mean, over the write scope's entries, of the best
specificity a tag reaches for each (0 for an entry no tag matches).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from memories.tags import is_glob, is_path_pattern, tag_matches_scope

# A keyword names no place in the tree: it ranks below every path that matches.
KEYWORD = 0.1
# A glob is a little less specific than the plain path of the same depth.
GLOB = 0.9
GLOB_FLOOR = 0.15


def _segments(path: str) -> list[str]:
    return [part for part in path.strip().strip("/").split("/") if part and part != "."]


def _literal_depth(pattern: str) -> int:
    """How many leading segments of a glob are literal (``src/a`` of ``src/a/**/x.py``)."""
    depth = 0
    for part in _segments(pattern):
        if is_glob(part):
            break
        depth += 1
    return depth


@lru_cache(maxsize=65536)
def specificity(tag: str, entry: str) -> float:
    """How specifically ``tag`` names ``entry`` (0 when it does not match it)."""
    if not tag_matches_scope(tag, [entry]):
        return 0.0
    if not is_path_pattern(tag):
        # A keyword that is the whole path (a file at the root: ``setup.py``) names it.
        return 1.0 if _is_whole(tag, entry) else KEYWORD
    depth = len(_segments(entry)) if not is_glob(entry) else _literal_depth(entry) + 1
    depth = max(depth, 1)
    if is_glob(tag):
        return max(GLOB_FLOOR, GLOB * min(_literal_depth(tag), depth) / depth)
    return min(len(_segments(tag)), depth) / depth


def _is_whole(keyword: str, entry: str) -> bool:
    return keyword.strip().lower() == entry.strip().strip("/").lower()


@dataclass(frozen=True)
class ScopeKey:
    """A tag key (memories.tags.tag_keys) that proves a tag matches write-scope entry
    ``entry`` (its index), and the specificity of such a tag for it: at least ``grade``."""

    key: str
    entry: int
    grade: float


def scope_keys(write_scope: Sequence[str]) -> list[ScopeKey]:
    """The keys of the tags that name each plain path of the write scope, with how
    specifically: ``path:`` of the path or a folder above it (the folder's share of the path's
    segments), ``tree:`` of a folder above it (a glob below the folder: GLOB of that share),
    ``kw:`` of a segment or a file stem (KEYWORD; the whole path, for a file at the root).
    A tag that is no plain path nor a glob below a folder is graded in Python only, as is a
    glob of the write scope. Most specific first."""
    entries = [entry for entry in write_scope if entry.strip()]
    found: dict[tuple[str, int], float] = {}

    def add(key: str, index: int, grade: float) -> None:
        found[key, index] = max(found.get((key, index), 0.0), round(grade, 6))

    for index, entry in enumerate(entries):
        if is_glob(entry):
            continue
        depth = max(len(_segments(entry)), 1)
        for i, ch in enumerate(entry):
            if ch == "/":
                above = min(len(_segments(entry[:i])), depth) / depth
                add("path:" + entry[:i], index, above)
                add("tree:" + entry[: i + 1], index, max(GLOB_FLOOR, GLOB * above))
        add("path:" + entry, index, 1.0)
        for segment in entry.lower().split("/"):
            add("kw:" + segment, index, KEYWORD)
            for j, ch in enumerate(segment):
                if ch == ".":
                    add("kw:" + segment[:j], index, KEYWORD)
        if depth == 1:
            add("kw:" + entry.strip().strip("/").lower(), index, 1.0)
    return sorted(
        (ScopeKey(key, index, grade) for (key, index), grade in found.items()),
        key=lambda k: (-k.grade, k.key, k.entry),
    )


def scope_grade(tags: Sequence[str], write_scope: Sequence[str]) -> float:
    """The mean over the write scope's entries of the best specificity of a tag (0 to 1)."""
    entries = [entry for entry in write_scope if entry.strip()]
    if not entries or not tags:
        return 0.0
    total = sum(max((specificity(tag, entry) for tag in tags), default=0.0) for entry in entries)
    return round(total / len(entries), 6)
