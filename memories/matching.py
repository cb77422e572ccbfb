"""How tags match a write scope, in SQL: the same rule as memories.tags, over the columns it
derives (``tag_patterns``, ``tag_keys``) and the owner-prefixed ``match_keys`` index.

Assembly's candidate query and the code-change staleness job both find a project's memories
for a set of paths with these conditions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memories.tags import Probe, probe_keys, scope_patterns

# A tag regex matches a scope entry, or a scope glob matches a tag (memories.tags).
SCOPE_MATCH = (
    "(EXISTS (SELECT 1 FROM unnest(m.tag_patterns) AS r(pattern),"
    " unnest(%(scope)s::text[]) AS s(entry) WHERE s.entry ~ r.pattern)"
    " OR EXISTS (SELECT 1 FROM unnest(m.tags) AS t(tag),"
    " unnest(%(scope_globs)s::text[]) AS g(pattern) WHERE t.tag ~ g.pattern))"
)


def tag_match(i: int, probe: Probe) -> str:
    """Whether memory ``m`` matches the write scope: an exact key proves it; otherwise the
    regexes decide, asked only when a candidate key (or an unanchored scope) allows it."""
    if probe.anchored:
        return (
            f"(m.match_keys && %(exact_{i})s::text[]"
            f" OR (m.match_keys && %(candidate_{i})s::text[] AND {SCOPE_MATCH}))"
        )
    return f"(m.match_keys && %(exact_{i})s::text[] OR {SCOPE_MATCH})"


def scope_lookup(i: int, owner: str, probe: Probe) -> tuple[str, dict[str, Any]]:
    """The index condition finding the write-scope matches of ``owner`` (a project id, or
    "g" for global memories) as lookup ``i`` of a statement, and its parameters."""
    params = {
        f"exact_{i}": [f"{owner}:{key}" for key in probe.exact],
        f"candidate_{i}": [f"{owner}:{key}" for key in probe.candidate],
    }
    if not probe.anchored:
        return "", params
    return f" AND m.match_keys && (%(exact_{i})s::text[] || %(candidate_{i})s::text[])", params


def scope_params(scope: Sequence[str]) -> dict[str, Any]:
    """The parameters SCOPE_MATCH reads: the scope's paths and the regexes of its globs."""
    return {"scope": list(scope), "scope_globs": scope_patterns(scope)}


def scope_condition(owner: str, paths: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """The condition (and its parameters) that memory ``m`` of ``owner`` has a tag matching
    one of ``paths``, looked up through the match keys as the assembly does."""
    scope = [path for path in paths if path]
    probe = probe_keys(scope)
    lookup, params = scope_lookup(0, owner, probe)
    return f"true{lookup} AND {tag_match(0, probe)}", params | scope_params(scope)
