"""The candidate query: the best memories of one or more sources for a task, in one statement.

Selection at run start and context assembly both rank with it. It reads a bounded number
of rows whatever the project's size, through indexes:

* every memory whose tags match the write scope, up to SCOPE_POOL, found through the
  owner-prefixed match keys (GIN) and confirmed by the exact rule (memories.tags);
* with an intent, the first TEXT_POOL memories holding all of its distinctive words and
  the first TEXT_POOL holding any of them, through the same index;
* the ``size`` best by confidence x relevance_score (memory_selection_idx);

and ranks that pool exactly: write-scope matches first, then text relevance to the intent,
then confidence x relevance_score, then confidence, then id.

Hand-written SQL on purpose: it is the hottest statement of the service, and building it
through the ORM cost more time than running it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

import psycopg
from django.db import connection

from memories.tags import Probe, probe_keys, scope_patterns

SCOPE_POOL = 1000
TEXT_POOL = 200
# A word of the intent that the table's statistics (ANALYZE's most common elements of
# match_keys) put in more rows than this says little about relevance, and looking it up
# would read a posting list that long: it still counts in the text rank of the pool but
# brings no candidates. Words missing from the statistics are rarer than any listed.
COMMON_WORD_ROWS = 2000


@dataclass(frozen=True)
class Source:
    """One source of memories: the owner prefix of its match keys (a project id, or "g" for
    global memories), and the SQL condition that selects it."""

    owner: str
    condition: str
    params: dict[str, Any] = field(default_factory=dict)


def project_source(project_id: int) -> Source:
    return Source(
        str(project_id),
        "m.project_id = %(project_id)s AND m.scope = 'project'",
        {"project_id": project_id},
    )


def global_source() -> Source:
    return Source("g", "m.project_id IS NULL AND m.scope = 'global'")


def run_source(project_id: int, run_id: int) -> Source:
    return Source(
        str(project_id),
        "m.project_id = %(project_id)s AND m.scope = 'run' AND m.source_run_id = %(run_id)s",
        {"project_id": project_id, "run_id": run_id},
    )


# The seed's rule for what an agent may be given: active, unexpired, confident enough.
_USABLE = (
    "m.active AND (m.expires_at IS NULL OR m.expires_at > %(now)s)"
    " AND m.confidence >= %(min_confidence)s"
)
# A tag regex matches a scope entry, or a scope glob matches a tag (memories.tags).
SCOPE_MATCH = (
    "(EXISTS (SELECT 1 FROM unnest(m.tag_patterns) AS r(pattern),"
    " unnest(%(scope)s::text[]) AS s(entry) WHERE s.entry ~ r.pattern)"
    " OR EXISTS (SELECT 1 FROM unnest(m.tags) AS t(tag),"
    " unnest(%(scope_globs)s::text[]) AS g(pattern) WHERE t.tag ~ g.pattern))"
)
# The intent's lexemes (stemmed like the stored keys) that the statistics do not call common.
_WORDS = """
    SELECT coalesce(array_agg(word), '{{}}') AS words
    FROM unnest(tsvector_to_array(to_tsvector('pg_catalog.english', %(intent)s::text))) AS word
    WHERE %(owner_{i})s || ':w:' || word NOT IN (
        SELECT element FROM pg_stats AS stats,
            unnest(stats.most_common_elems::text::text[], stats.most_common_elem_freqs)
                AS common(element, frequency)
        WHERE stats.schemaname = current_schema() AND stats.tablename = 'project_memories'
            AND stats.attname = 'match_keys' AND element IS NOT NULL
            AND frequency * (
                SELECT reltuples FROM pg_class WHERE oid = 'project_memories'::regclass
            ) > %(common_word_rows)s
    )"""
# Any word of the intent counts (an OR of its stemmed lexemes); ts_rank_cd weighs how many
# and how close; normalisation 32 maps the rank into [0, 1).
_TEXT_RANK = (
    "ts_rank_cd(m.search_vector,"
    " replace(plainto_tsquery('english', %(intent)s::text)::text, ' & ', ' | ')::tsquery, 32)"
)


def _word_keys(i: int) -> str:
    return f"ARRAY(SELECT %(owner_{i})s || ':w:' || w FROM unnest((SELECT words FROM words_{i})) w)"


def _tag_match(i: int, probe: Probe) -> str:
    """Whether memory ``m`` matches the write scope: an exact key proves it; otherwise the
    regexes decide, asked only when a candidate key (or an unanchored scope) allows it."""
    if probe.anchored:
        return (
            f"(m.match_keys && %(exact_{i})s::text[]"
            f" OR (m.match_keys && %(candidate_{i})s::text[] AND {SCOPE_MATCH}))"
        )
    return f"(m.match_keys && %(exact_{i})s::text[] OR {SCOPE_MATCH})"


def _scope_lookup(i: int, source: Source, probe: Probe) -> tuple[str, dict[str, Any]]:
    """The index condition finding source ``i``'s write-scope matches, and its parameters."""
    params = {
        f"exact_{i}": [f"{source.owner}:{key}" for key in probe.exact],
        f"candidate_{i}": [f"{source.owner}:{key}" for key in probe.candidate],
    }
    if not probe.anchored:
        return "", params
    return f" AND m.match_keys && (%(exact_{i})s::text[] || %(candidate_{i})s::text[])", params


def candidate_query(
    sources: Sequence[Source],
    *,
    write_scope: Sequence[str],
    intent: str,
    size: int,
    min_confidence: float,
    now: datetime,
    columns: str,
) -> tuple[str, dict[str, Any]]:
    """SQL and parameters of the ranked candidates; ``columns`` of ``m`` (the memory) to
    return besides ``source`` (the index of its source), ``tag_match``, ``text_rank`` and
    ``quality``."""
    scope = [entry for entry in write_scope if entry]
    probe = probe_keys(scope)
    with_intent = bool(intent.strip())
    params: dict[str, Any] = {
        "scope": scope,
        "scope_globs": scope_patterns(scope),
        "intent": intent,
        "size": size,
        "now": now,
        "min_confidence": min_confidence,
        "common_word_rows": COMMON_WORD_ROWS,
    }
    ctes: list[str] = []
    branches: list[str] = []
    for i, source in enumerate(sources):
        params.update(source.params)
        params[f"owner_{i}"] = source.owner
        lookup, lookup_params = _scope_lookup(i, source, probe)
        params.update(lookup_params)
        where = f"{source.condition} AND {_USABLE}"
        tag_match = _tag_match(i, probe)
        select = f"SELECT m.id, {i} AS source, {tag_match} AS tag_match FROM project_memories m"
        branches.append(f"({select} WHERE {where}{lookup} AND {tag_match} LIMIT {SCOPE_POOL})")
        if with_intent:
            ctes.append(f"words_{i} AS ({_WORDS.format(i=i)})")
            branches.append(
                f"({select} WHERE {where} AND m.match_keys && {_word_keys(i)} LIMIT {TEXT_POOL})"
            )
            branches.append(
                f"({select} WHERE {where} AND cardinality((SELECT words FROM words_{i})) > 0"
                f" AND m.match_keys @> {_word_keys(i)} LIMIT {TEXT_POOL})"
            )
        branches.append(
            f"({select} WHERE {where}"
            " ORDER BY m.confidence * m.relevance_score DESC, m.id LIMIT %(size)s)"
        )
    text_rank = _TEXT_RANK if with_intent else "0.0::float8"
    pool = "\n  UNION ".join(branches)
    sql = (
        (f"WITH {', '.join(ctes)}\n" if ctes else "")
        + f"SELECT {columns}, pool.source, pool.tag_match,"
        f" {text_rank} AS text_rank, m.confidence * m.relevance_score AS quality\n"
        f"FROM ({pool}) AS pool JOIN project_memories m ON m.id = pool.id\n"
        "ORDER BY pool.tag_match DESC, text_rank DESC, quality DESC, m.confidence DESC, m.id"
        " LIMIT %(size)s"
    )
    return sql, params


def fetch_dicts(sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Run a statement with server-side parameters, so that psycopg prepares it once it has
    run a few times on the connection (its text depends only on the request's shape: the
    sources, an intent or not, an anchored scope or not); logged like any query."""
    connection.ensure_connection()
    raw = psycopg.Cursor(connection.connection)
    wrap = connection.make_debug_cursor if connection.queries_logged else connection.make_cursor
    with wrap(cast(Any, raw)) as cursor:
        cursor.execute(sql, params)
        names = [column.name for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def left_out_query(
    *, project_id: int, write_scope: Sequence[str], min_confidence: float, now: datetime, limit: int
) -> tuple[str, dict[str, Any]]:
    """Active memories of a project matching the write scope that the usable rule leaves out
    (expired, or below the minimum confidence), most confident first."""
    scope = [entry for entry in write_scope if entry]
    probe = probe_keys(scope)
    source = project_source(project_id)
    lookup, lookup_params = _scope_lookup(0, source, probe)
    sql = (
        "SELECT m.id, m.confidence, m.expires_at FROM project_memories m"
        f" WHERE {source.condition} AND m.active AND NOT ({_USABLE}){lookup}"
        f" AND {_tag_match(0, probe)}"
        " ORDER BY m.confidence DESC, m.id LIMIT %(limit)s"
    )
    return sql, {
        **source.params,
        **lookup_params,
        "scope": scope,
        "scope_globs": scope_patterns(scope),
        "now": now,
        "min_confidence": min_confidence,
        "limit": limit,
    }
