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

import json
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

import psycopg
from django.db import OperationalError, connection, transaction

from memories.matching import scope_lookup, scope_params, tag_match
from memories.models import Memory, MemoryEmbedding, Scope
from memories.models.choices import sql_literal
from memories.statements import server_cursor
from memories.statistics import (
    common_word_keys,
    common_word_rows,
    statistics,
)
from memories.tags import probe_keys

MEMORIES = Memory._meta.db_table
EMBEDDINGS = MemoryEmbedding._meta.db_table
_PROJECT = sql_literal(Scope.PROJECT)
_RUN = sql_literal(Scope.RUN)
SCOPE_POOL = 1000
TEXT_POOL = 200
# With pgvector, the memories nearest the task in meaning (through the HNSW index) join the
# pool too: up to this many per source (pgvector's default hnsw.ef_search).
NEAR_POOL = 40


@dataclass(frozen=True)
class Meaning:
    """The task's embedding: the model that made it (only its vectors are compared), and,
    where pgvector's index of that model exists, the vector and its dimensions for the
    nearest-memory lookup."""

    model: str
    vector: str | None = None  # pgvector's text form, '[0.1,...]'
    dimensions: int = 0


@dataclass(frozen=True)
class Source:
    """One source of memories: the owner prefix of its match keys (a project id, or "g" for
    global memories), the SQL condition that selects it, and the part of that condition the
    owner prefix does not already imply. A lookup through the match keys filters with the
    latter only: that leaves the planner no index on the project to combine with the keys
    (reading a whole project's entries of it cost more than the lookup itself)."""

    owner: str
    condition: str
    key_filter: str
    params: dict[str, Any] = field(default_factory=dict)
    # Its rows of the embeddings table (``e``), for the nearest-by-meaning lookup; None for
    # a source too small to need one.
    embedding_filter: str | None = None


def project_source(project_id: int) -> Source:
    return Source(
        str(project_id),
        f"m.project_id = %(project_id)s AND m.scope = {_PROJECT}",
        f"m.scope = {_PROJECT}",
        {"project_id": project_id},
        "e.project_id = %(project_id)s",
    )


def global_source() -> Source:
    # Global memories are exactly those without a project (memory_global_iff_no_project):
    # naming the scope too would make the planner believe there are almost none.
    return Source("g", "m.project_id IS NULL", "true", {}, "e.project_id IS NULL")


def run_source(project_id: int, run_id: int) -> Source:
    return Source(
        str(project_id),
        f"m.project_id = %(project_id)s AND m.scope = {_RUN} AND m.source_run_id = %(run_id)s",
        f"m.scope = {_RUN} AND m.source_run_id = %(run_id)s",
        {"project_id": project_id, "run_id": run_id},
    )


# The seed's rule for what an agent may be given: active, unexpired, confident enough.
_USABLE = (
    "m.active AND (m.expires_at IS NULL OR m.expires_at > %(now)s)"
    " AND m.confidence >= %(min_confidence)s"
)
# The intent's lexemes (stemmed like the stored keys), less the ones the statistics call common.
_WORDS = """
    SELECT coalesce(array_agg(word), '{{}}') AS words
    FROM unnest(tsvector_to_array(to_tsvector('pg_catalog.english', %(intent)s::text))) AS word
    WHERE %(owner_{i})s || ':w:' || word <> ALL(%(common_{i})s::text[])"""
# Each owner's number of active memories and their mean number of distinct words (BM25's N
# and average length), read at most every COMMON_WORDS_SECONDS per process as well, from at
# most OWNER_SAMPLE rows: an owner with more has its count estimated by the planner (from the
# table's statistics), so the cost does not grow with the project.
OWNER_SAMPLE = 10000
_OWNER_STATS = f"""
    SELECT count(*), coalesce(avg(length(s.search_vector)), 1) FROM (
        SELECT m.search_vector FROM {MEMORIES} m WHERE m.active AND {{owner}}
        LIMIT {{sample}}) AS s"""
_OWNER_ESTIMATE = f"EXPLAIN (FORMAT JSON) SELECT 1 FROM {MEMORIES} m WHERE m.active AND {{owner}}"


def owner_stats(owner: str) -> tuple[int, float]:
    """``owner``'s number of active memories and mean number of distinct words (both from at
    most OWNER_SAMPLE rows; beyond, the number is the planner's estimate)."""
    stats = statistics()["stats"]
    if owner not in stats:
        condition = "m.project_id IS NULL" if owner == "g" else "m.project_id = %s"
        values = [] if owner == "g" else [int(owner)]
        with connection.cursor() as cursor:
            cursor.execute(_OWNER_STATS.format(owner=condition, sample=OWNER_SAMPLE), values)
            count, mean_length = cursor.fetchone()
            if count >= OWNER_SAMPLE:
                cursor.execute(_OWNER_ESTIMATE.format(owner=condition), values)
                plan = cursor.fetchone()[0]
                plan = json.loads(plan) if isinstance(plan, str) else plan
                count = max(count, int(plan[0]["Plan"]["Plan Rows"]))
        stats[owner] = (int(count), max(float(mean_length), 1.0))
    return stats[owner]


# Any word of the intent counts (an OR of its stemmed lexemes), built once per statement.
_QUERY = (
    "query AS (SELECT replace(plainto_tsquery('english', %(intent)s::text)::text,"
    " ' & ', ' | ')::tsquery AS q)"
)
# BM25 (Okapi): each word of the intent weighs by its rarity in the source's owner (IDF from
# its document frequency: ANALYZE's estimate for a common word, else the rows holding it,
# counted up to DF_COUNTED through the match-key index), and by how often the memory says it
# against the memory's length. A memory holding none of the words ranks 0 without the sum.
BM25_K1 = 1.2
BM25_B = 0.75
DF_COUNTED = 500
# A word's memories, counted up to DF_COUNTED through the match-key index. The key is a
# parameter of its own, so that PostgreSQL plans the count for that very key (a key the
# statistics do not list is rare: an index lookup, never a scan stopped at the limit).
_DF_COUNT = (
    f"(SELECT count(*) FROM (SELECT 1 FROM {MEMORIES} d"
    " WHERE d.match_keys @> %({key})s::text[] AND d.active LIMIT " + str(DF_COUNTED) + ") AS x)"
)


@lru_cache(maxsize=4096)
def intent_words(intent: str) -> tuple[str, ...]:
    """The intent's lexemes, stemmed as the stored ones (remembered per process)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tsvector_to_array(to_tsvector('pg_catalog.english', %s::text))", [intent]
        )
        return tuple(cursor.fetchone()[0])


def _terms(i: int, owner: str, intent: str, params: dict[str, Any]) -> str:
    """The CTE ``terms_i``: each word of the intent and its IDF in ``owner``."""
    common = common_word_rows(owner)
    docs, mean_length = owner_stats(owner)
    params[f"docs_{i}"] = float(max(docs, 1))
    params[f"avgdl_{i}"] = mean_length
    rows = []
    for j, word in enumerate(intent_words(intent)):
        key = f"{owner}:w:{word}"
        params[f"word_{i}_{j}"] = word
        if key in common:
            params[f"df_{i}_{j}"] = common[key]
            df = f"%(df_{i}_{j})s::float8"
        else:
            params[f"key_{i}_{j}"] = [key]
            df = _DF_COUNT.format(key=f"key_{i}_{j}")
        rows.append(f"(%(word_{i}_{j})s::text, {df})")
    if not rows:
        return f"terms_{i} AS (SELECT NULL::text AS word, 0.0::float8 AS idf WHERE false)"
    return (
        f"terms_{i} AS (SELECT word, ln(1 + (%(docs_{i})s::float8 - n + 0.5) / (n + 0.5)) AS idf"
        f" FROM (VALUES {', '.join(rows)}) AS t(word, n))"
    )


def _bm25(i: int) -> str:
    return (
        f"(SELECT coalesce(sum(t.idf * cardinality(u.positions) * {BM25_K1 + 1}"
        f" / (cardinality(u.positions) + {BM25_K1} * ({1 - BM25_B} + {BM25_B}"
        f" * length(m.search_vector) / %(avgdl_{i})s::float8))), 0)"
        f" FROM unnest(m.search_vector) AS u JOIN terms_{i} AS t ON t.word = u.lexeme)"
    )


def _word_keys(i: int) -> str:
    return f"ARRAY(SELECT %(owner_{i})s || ':w:' || w FROM unnest((SELECT words FROM words_{i})) w)"


def candidate_query(
    sources: Sequence[Source],
    *,
    write_scope: Sequence[str],
    intent: str,
    size: int,
    min_confidence: float,
    now: datetime,
    columns: str,
    left_out: int = 0,
    meaning: Meaning | None = None,
) -> tuple[str, dict[str, Any]]:
    """SQL and parameters of the ranked candidates; ``columns`` of ``m`` (the memory) to
    return besides ``source`` (the index of its source), ``tag_match``, ``text_rank``,
    ``quality`` and ``usable``.

    With ``meaning``, each row also has ``embedding``: its fresh vector by that model (as
    ``array_send`` gives a ``real[]``; NULL without one), read for the rows returned only.
    With pgvector's index (``meaning.vector``), the NEAR_POOL memories of each source nearest
    the task join the pool and rank after the matches of its words, before the others.

    With ``left_out``, the same statement also returns, with ``usable`` false and in no
    particular order, up to that many of the active write-scope matches that the usable
    rule leaves out (expired or not confident enough), most confident first: the one
    write-scope lookup serves both, so the pool holds the first SCOPE_POOL active matches.
    """
    scope = [entry for entry in write_scope if entry]
    probe = probe_keys(scope)
    with_intent = bool(intent.strip())
    params: dict[str, Any] = {
        **scope_params(scope),
        "intent": intent,
        "size": size,
        "now": now,
        "min_confidence": min_confidence,
        "left_out": left_out,
    }
    ctes: list[str] = []
    branches: list[str] = []
    # Whether a pool row matches the write scope, decided once per row of the pool (a row
    # found by words or quality may match too, when the scope had more than SCOPE_POOL).
    tag_matches: list[str] = []
    text_ranks: list[str] = []
    nearest: list[str] = []
    if meaning is not None:
        params["model"] = meaning.model
        params["meaning"] = meaning.vector
    for i, source in enumerate(sources):
        params.update(source.params)
        params[f"owner_{i}"] = source.owner
        lookup, lookup_params = scope_lookup(i, source.owner, probe)
        params.update(lookup_params)
        matches = tag_match(i, probe)
        tag_matches.append(f"WHEN {i} THEN {matches}")
        select = f"SELECT m.id, m.confidence, {i} AS source"

        def usable(where: str, select: str = select) -> str:
            return f"{select}, true AS usable FROM {MEMORIES} m WHERE {where} AND {_USABLE}"

        # Through the match keys, the source's own keys already narrow the rows to it.
        scoped = source.key_filter if lookup else source.condition
        if left_out:
            branches.append(
                f"({select}, {_USABLE} AS usable FROM {MEMORIES} m"
                f" WHERE {scoped} AND m.active{lookup} AND {matches} LIMIT {SCOPE_POOL})"
            )
        else:
            branches.append(f"({usable(scoped)}{lookup} AND {matches} LIMIT {SCOPE_POOL})")
        if with_intent:
            params[f"common_{i}"] = common_word_keys(source.owner)
            ctes.append(f"words_{i} AS ({_WORDS.format(i=i)})")
            ctes.append(_terms(i, source.owner, intent, params))
            text_ranks.append(f"WHEN {i} THEN {_bm25(i)}")
            by_word = usable(source.key_filter)
            branches.append(f"({by_word} AND m.match_keys && {_word_keys(i)} LIMIT {TEXT_POOL})")
            branches.append(
                f"({by_word} AND cardinality((SELECT words FROM words_{i})) > 0"
                f" AND m.match_keys @> {_word_keys(i)} LIMIT {TEXT_POOL})"
            )
        if meaning is not None and meaning.vector and source.embedding_filter:
            vector = f"vector({int(meaning.dimensions)})"
            ctes.append(
                f"near_{i} AS (SELECT e.memory_id AS id FROM {EMBEDDINGS} e"
                f" WHERE e.model = %(model)s AND {source.embedding_filter}"
                f" ORDER BY e.vector::{vector} <=> %(meaning)s::{vector} LIMIT {NEAR_POOL})"
            )
            nearest.append(f"SELECT id FROM near_{i}")
            branches.append(f"({usable(source.condition)} AND m.id IN (SELECT id FROM near_{i}))")
        branches.append(
            f"({usable(source.condition)}"
            " ORDER BY m.confidence * m.relevance_score DESC, m.id LIMIT %(size)s)"
        )
    text_rank = (
        "CASE WHEN m.search_vector @@ (SELECT q FROM query)"
        f" THEN CASE pool.source {' '.join(text_ranks)} END ELSE 0.0 END"
        if with_intent
        else "0.0::float8"
    )
    if with_intent:
        ctes.insert(0, _QUERY)
    ctes.append("pool AS (" + "\n  UNION ".join(branches) + ")")
    pool_match = f"CASE pool.source {' '.join(tag_matches)} END"
    # With a model, each row's content hash finds its vector (a vector of other words is stale).
    hashed = ", m.content_hash AS embedded_hash" if meaning is not None else ""
    chosen = (
        f"SELECT {columns}, pool.source, {{tag_match}} AS tag_match, {{rank}} AS text_rank,"
        f" m.confidence * m.relevance_score AS quality, pool.usable{hashed}{{embedding}}"
        f" FROM {{pool}} JOIN {MEMORIES} m ON m.id = pool.id"
    )
    # Rows found by meaning only rank after the matches of the intent's words.
    near = f" pool.id IN ({' UNION ALL '.join(nearest)}) DESC," if nearest else ""
    body = chosen.format(tag_match=pool_match, rank=text_rank, pool="pool", embedding="") + (
        " WHERE pool.usable"
        f" ORDER BY tag_match DESC, text_rank DESC,{near}"
        " quality DESC, m.confidence DESC, m.id LIMIT %(size)s"
    )
    if meaning is not None:
        # The vectors of the rows returned only.
        body = (
            "SELECT ranked.*, array_send(e.vector) AS embedding"
            f" FROM ({body}) AS ranked LEFT JOIN {EMBEDDINGS} e ON e.memory_id = ranked.id"
            " AND e.model = %(model)s AND e.content_hash = ranked.embedded_hash"
        )
    if left_out:
        # Ordered and cut in the pool, so only the rows shown are read again; all of them
        # come from the write-scope lookup.
        left = chosen.format(
            tag_match="true",
            rank="0.0::float8",
            pool="(SELECT * FROM pool WHERE NOT pool.usable"
            " ORDER BY pool.confidence DESC, pool.id LIMIT %(left_out)s) AS pool",
            embedding=", NULL::bytea AS embedding" if meaning is not None else "",
        )
        body = f"SELECT * FROM ({body}) AS ranked UNION ALL {left}"
    return f"WITH {', '.join(ctes)}\n{body}", params


class Cancelled(Exception):
    """PostgreSQL cancelled the statement at its timeout."""


def fetch_dicts(
    sql: str, params: dict[str, Any], *, timeout_ms: float | None = None
) -> list[dict[str, Any]]:
    """Run a statement with server-side parameters (arrays and the intent are sent as values,
    not spliced into the text); logged like any query. It is not prepared: a generic plan
    of the candidate query reads a whole project, and PostgreSQL plans each run for its
    values anyway.

    With ``timeout_ms``, PostgreSQL cancels the statement at that deadline (Cancelled is
    raised). The settings (the timeout, no JIT) are set, the statement run and the settings
    reset in one pipeline: one round trip, and a cancelled statement rolls the settings back
    with it. Inside a transaction a savepoint keeps the cancellation from aborting the rest
    of it."""
    connection.ensure_connection()
    inside = transaction.atomic() if connection.in_atomic_block else nullcontext()
    timeout = str(max(1, int(timeout_ms))) if timeout_ms is not None else None
    try:
        with (
            inside,
            server_cursor() as setting,
            server_cursor() as cursor,
            server_cursor() as reset,
            connection.connection.pipeline(),
        ):
            # No JIT: the statement's estimated cost (one small sum per pooled row) would
            # have PostgreSQL compile it for far longer than it runs.
            setting.execute(
                "SELECT set_config('jit', 'off', false), set_config('statement_timeout',"
                " coalesce(%s::text, current_setting('statement_timeout')), false)",
                [timeout],
            )
            cursor.execute(sql, params)
            reset.execute(
                "SELECT set_config(name, reset_val, false) FROM pg_settings"
                " WHERE name IN ('jit', 'statement_timeout')"
            )
            return _dicts(cursor)
    except (psycopg.errors.QueryCanceled, OperationalError) as error:
        cause = error if isinstance(error, psycopg.Error) else error.__cause__
        if getattr(cause, "sqlstate", None) == "57014":  # query_canceled
            raise Cancelled from error
        raise


def _dicts(cursor: Any) -> list[dict[str, Any]]:
    rows = cursor.fetchall()
    names = [column.name for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in rows]
