"""The candidate query: the best memories of one or more sources for a task, in one statement.

Selection at run start and context assembly both rank with it. It reads a bounded number
of rows whatever the project's size, through the owner-prefixed match keys (one GIN index):

* the memories whose tags match the write scope, most specific first: through the keys
  that name each scope path (the very file, a folder above it, a glob below one, a keyword:
  assembly.scope.scope_keys) and then the tags only the exact rule can confirm (other
  globs, the scope's own globs), up to SCOPE_POOL;
* with words (the intent's and the write scope's: memories.words), the first TEXT_POOL
  memories holding any of the distinctive ones and the first TEXT_POOL holding all of the
  intent's;
* with pgvector, the NEAR_POOL nearest in meaning;
* the ``size`` best by confidence x relevance_score (memory_selection_idx).

Every usable row of that pool is graded before any is cut, so no memory is left out for one
with a worse scope grade and better words: write-scope matches first, then a first estimate
of the score (scope grade from the keys, each word of the task counted once, quality,
recency, nearness); the best 2 x ``size`` get their exact BM25 and are ordered again, and
the best ``size`` are returned for the full ranking in Python (assembly.packing.rank). The
pool's rows carry the columns that ranking reads: no row is read twice.

Hand-written SQL on purpose: it is the hottest statement of the service, and building it
through the ORM cost more time than running it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from django.db import OperationalError, transaction

from assembly import bm25
from assembly.bm25 import owner_stats, presence, task_terms
from assembly.scope import scope_keys
from knowledge.models import MemoryEmbedding
from memories import replicas
from memories.matching import scope_lookup, scope_params, tag_match
from memories.models import Memory, Scope
from memories.models.choices import sql_literal
from memories.statements import server_cursor
from memories.statistics import common_word_keys
from memories.tags import probe_keys
from memories.words import TaskWords, task_words

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


@dataclass(frozen=True)
class Ranking:
    """How the statement orders what it returns beyond the write-scope matches: the policy's
    weights of the parts it can compute (assembly.packing.Weights; the rest are ranked in
    Python over the rows returned)."""

    scope: float
    text: float
    path: float
    semantic: float
    quality: float
    recency: float
    half_life_days: float = 30.0

    @classmethod
    def of(cls, weights: Any, half_life_days: float = 30.0) -> Ranking:
        """The parts of ``weights`` (assembly.packing.Weights) this statement computes."""
        return cls(
            scope=weights.scope,
            text=weights.text,
            path=weights.path,
            semantic=weights.semantic,
            quality=weights.quality,
            recency=weights.recency,
            half_life_days=half_life_days,
        )


def _found(usable: str, key: str) -> str:
    """A pool row: the memory's id, whether it is usable, the key the write-scope lookup
    found it by (NULL when another lookup did), and the columns ranking reads (so that the
    pool is ranked without reading the rows again)."""
    return (
        f"m.id, {usable} AS usable, {key} AS key, m.confidence, m.relevance_score,"
        " m.created_at, m.search_vector, m.match_keys, m.tag_patterns, m.tags"
    )


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
    ranking: Ranking | None = None,
    versions: Mapping[str, str] | None = None,
) -> tuple[str, dict[str, Any]]:
    """SQL and parameters of the ranked candidates; ``columns`` of ``m`` (the memory) to
    return besides ``source`` (the index of its source), ``tag_match``, ``grade`` (the scope
    grade of its tags, as far as their keys tell: assembly.scope.scope_keys), ``text_rank``
    and ``path_rank`` (BM25 of the intent's and of the write scope's words), ``quality`` and
    ``usable``.

    The pool is bounded whatever the project's size: the write-scope matches, most specific
    tags first (the graded keys, then the tags only a regex can match), up to SCOPE_POOL;
    the first TEXT_POOL memories holding any of the task's distinctive words and the first
    TEXT_POOL holding all of its intent's; the ``size`` best by confidence x relevance score.
    Every usable row of the pool is graded before any is cut: matches first, then by
    ``ranking``'s score of scope grade, words (each counted once), quality and recency; the
    best 2 x ``size`` get their exact BM25 and are ranked again, and the best ``size`` are
    returned. Without ``ranking`` (the seed's selection), matches first, then confidence x
    relevance score.

    With ``meaning``, each row also has ``embedding``: its fresh vector by that model (as
    ``array_send`` gives a ``real[]``; NULL without one), read for the rows returned only.
    With pgvector's index (``meaning.vector``), the NEAR_POOL memories of each source nearest
    the task join the pool, with their cosine as the semantic part of the first estimate.

    With ``left_out``, the same statement also returns, with ``usable`` false and in no
    particular order, up to that many of the active write-scope matches that the usable
    rule leaves out (expired or not confident enough), most confident first.
    """
    scope = [entry for entry in write_scope if entry]
    entries = [entry for entry in scope if entry.strip()]
    probe = probe_keys(scope)
    keys = scope_keys(scope)
    words = task_words(intent, scope) if ranking is not None else TaskWords((), ())
    params: dict[str, Any] = {
        **scope_params(scope),
        "size": size,
        "shortlist": 2 * size,
        "now": now,
        "min_confidence": min_confidence,
        "left_out": left_out,
        "entries": float(max(len(entries), 1)),
    }
    if ranking is not None:
        params.update(
            w_scope=ranking.scope,
            w_text=ranking.text,
            w_path=ranking.path,
            w_semantic=ranking.semantic,
            w_quality=ranking.quality,
            w_recency=ranking.recency,
            half_life=float(ranking.half_life_days),
        )
    if meaning is not None:
        params["model"] = meaning.model
        params["meaning"] = meaning.vector
    ctes: list[str] = []
    ranked: list[str] = []
    left: list[str] = []
    # What the final order and the vectors' lookup read, whatever ``columns`` holds.
    extra = ", m.id AS rank_id, m.confidence AS rank_confidence" + (
        ", m.content_hash AS embedded_hash" if meaning is not None else ""
    )
    for i, source in enumerate(sources):
        params.update(source.params)
        params[f"owner_{i}"] = source.owner
        params.update(scope_lookup(i, source.owner, probe)[1])
        params[f"sk_key_{i}"] = [f"{source.owner}:{k.key}" for k in keys]
        params[f"sk_entry_{i}"] = [k.entry for k in keys]
        params[f"sk_grade_{i}"] = [k.grade for k in keys]
        graded_keys = set(params[f"sk_key_{i}"])
        params[f"other_{i}"] = sorted(
            set(params[f"exact_{i}"]) - graded_keys | set(params[f"candidate_{i}"])
        )
        matches = tag_match(i, probe)
        found = [
            # The write-scope matches through the graded keys, most specific first.
            f"(SELECT f.* FROM (SELECT key, max(grade) AS best"
            f" FROM unnest(%(sk_key_{i})s::text[], %(sk_grade_{i})s::float8[]) AS k(key, grade)"
            " GROUP BY key ORDER BY best DESC, key) AS k CROSS JOIN LATERAL"
            f" (SELECT {_found(_USABLE, 'k.key')} FROM {MEMORIES} m"
            f" WHERE m.match_keys @> ARRAY[k.key] AND {source.key_filter} AND m.active"
            f" LIMIT {SCOPE_POOL}) AS f LIMIT {SCOPE_POOL})",
        ]
        # Matches of tags the keys cannot grade (other globs), and of the scope's own globs.
        other = f" AND m.match_keys && %(other_{i})s::text[]" if probe.anchored else ""
        scoped = source.key_filter if probe.anchored else source.condition
        globbed = _found(_USABLE, "''")
        found.append(
            f"(SELECT {globbed} FROM {MEMORIES} m"
            f" WHERE {scoped} AND m.active{other} AND {matches} LIMIT {SCOPE_POOL})"
        )

        def usable(where: str, i: int = i) -> str:
            # Looked up only when the write scope's usable matches are too few to fill the
            # shortlist: matches come first, so with enough of them no other row is given.
            row = _found("true", "NULL::text")
            return (
                f"SELECT {row} FROM {MEMORIES} m WHERE {where} AND {_USABLE}"
                f" AND NOT (SELECT enough FROM enough_{i})"
            )

        terms = (
            task_terms(source.owner, words, (versions or {}).get(source.owner)) if words.all else []
        )
        params[f"avgdl_{i}"] = owner_stats(source.owner)[1] if terms else 1.0
        params[f"t_word_{i}"] = [t.word for t in terms]
        params[f"t_idf_{i}"] = [t.idf for t in terms]
        params[f"t_intent_{i}"] = [t.intent for t in terms]
        params[f"t_path_{i}"] = [t.path for t in terms]
        # The memories holding the task's words, through their keys: not the words the
        # statistics call common (memories.statistics), nor a word of the write scope that
        # more than TEXT_POOL memories hold (those are the scope's matches, found above).
        common = set(common_word_keys(source.owner))
        looked_up = [
            (term, key)
            for term in terms
            if (key := f"{source.owner}:w:{term.word}") not in common
            and (term.intent or term.df <= TEXT_POOL)
        ]
        if looked_up:
            by_word = usable(source.key_filter)
            params[f"any_{i}"] = [key for _, key in looked_up]
            found.append(f"({by_word} AND m.match_keys && %(any_{i})s::text[] LIMIT {TEXT_POOL})")
            params[f"all_{i}"] = [key for term, key in looked_up if term.intent]
            if params[f"all_{i}"]:
                found.append(
                    f"({by_word} AND m.match_keys @> %(all_{i})s::text[] LIMIT {TEXT_POOL})"
                )
        near = "0.0::float8"
        if meaning is not None and meaning.vector and source.embedding_filter:
            vector = f"vector({int(meaning.dimensions)})"
            ctes.append(
                f"near_{i} AS (SELECT e.memory_id AS id,"
                f" 1 - (e.vector::{vector} <=> %(meaning)s::{vector}) AS cosine"
                f" FROM {EMBEDDINGS} e WHERE e.model = %(model)s AND {source.embedding_filter}"
                f" ORDER BY e.vector::{vector} <=> %(meaning)s::{vector} LIMIT {NEAR_POOL})"
            )
            found.append(f"({usable(source.condition)} AND m.id IN (SELECT id FROM near_{i}))")
            near = f"coalesce((SELECT greatest(n.cosine, 0) FROM near_{i} n WHERE n.id = m.id), 0)"
        found.append(
            f"({usable(source.condition)}"
            " ORDER BY m.confidence * m.relevance_score DESC, m.id LIMIT %(size)s)"
        )
        ctes.append(f"scoped_{i} AS MATERIALIZED ({' UNION ALL '.join(found[:2])})")
        ctes.append(
            f"enough_{i} AS (SELECT count(*) >= %(shortlist)s AS enough FROM scoped_{i}"
            " WHERE usable)"
        )
        others = "".join(f" UNION ALL {branch}" for branch in found[2:])
        ctes.append(f"found_{i} AS (SELECT * FROM scoped_{i}{others})")
        # Each memory once, as the write-scope lookup found it when it did (``key`` not null:
        # a match, proven by a key or by the exact rule).
        ctes.append(
            f"pool_{i} AS (SELECT DISTINCT ON (id) * FROM found_{i} ORDER BY id, key IS NULL)"
        )
        # The scope grade of the rows found through the graded keys: for each entry of the
        # scope, the best grade of a key the row holds; their mean.
        ctes.append(
            f"graded_{i} AS (SELECT id, sum(best) / %(entries)s AS grade FROM ("
            f" SELECT f.id, s.entry, max(s.grade) AS best FROM found_{i} f"
            f" JOIN unnest(%(sk_key_{i})s::text[], %(sk_entry_{i})s::int[],"
            f" %(sk_grade_{i})s::float8[]) AS s(key, entry, grade) ON s.key = f.key"
            " GROUP BY f.id, s.entry) AS b GROUP BY id)"
        )
        # The pool's rows carry the columns these read (``m`` below is the pool).
        tag_matched = f"(m.key IS NOT NULL OR {matches})"
        quality = "m.confidence * m.relevance_score"
        if ranking is None:
            ranked.append(
                f"SELECT {columns}, {i} AS source, p.tag_match, p.grade, 0.0::float8 AS"
                f" text_rank, 0.0::float8 AS path_rank, p.quality, true AS usable,"
                f" 0.0::float8 AS estimate{extra} FROM (SELECT m.id, {tag_matched} AS tag_match,"
                f" coalesce(g.grade, 0.0) AS grade, {quality} AS quality FROM pool_{i} m"
                f" LEFT JOIN graded_{i} g ON g.id = m.id WHERE m.usable) AS p"
                f" JOIN {MEMORIES} m ON m.id = p.id"
            )
        else:
            recency = (
                "CASE WHEN %(half_life)s > 0 THEN exp(-ln(2) * greatest(floor(extract(epoch"
                " FROM %(now)s) / 86400) - floor(extract(epoch FROM m.created_at) / 86400), 0)"
                " / %(half_life)s) ELSE 0 END"
            )
            ctes.append(
                f"first_{i} AS (SELECT m.id, {tag_matched} AS tag_match,"
                f" coalesce(g.grade, 0.0) AS grade, {presence(i, terms, 'intent', params)}"
                f" AS intent, {presence(i, terms, 'path', params)} AS path,"
                f" {near} AS near, {quality} AS quality, {recency} AS recency,"
                f" m.confidence, m.search_vector FROM pool_{i} m"
                f" LEFT JOIN graded_{i} g ON g.id = m.id WHERE m.usable)"
            )
            ctes.append(
                f"short_{i} AS (SELECT * FROM first_{i} ORDER BY tag_match DESC,"
                " %(w_scope)s * grade + %(w_text)s * coalesce(intent / nullif(max(intent)"
                " OVER (), 0), 0) + %(w_path)s * coalesce(path / nullif(max(path) OVER (), 0),"
                " 0) + %(w_semantic)s * near + %(w_quality)s * quality"
                " + %(w_recency)s * recency DESC, confidence DESC, id LIMIT %(shortlist)s)"
            )
            if terms:
                exact = f"CROSS JOIN LATERAL {bm25.exact(i)} AS x"
                text_rank, path_rank = "x.intent", "x.path"
            else:
                exact, text_rank, path_rank = "", "0.0::float8", "0.0::float8"
            ctes.append(
                f"exact_{i} AS (SELECT s.*, {text_rank} AS text_rank, {path_rank} AS path_rank"
                f" FROM short_{i} s {exact})"
            )
            ranked.append(
                f"SELECT {columns}, {i} AS source, s.tag_match, s.grade, s.text_rank,"
                " s.path_rank, s.quality, true AS usable,"
                " %(w_scope)s * s.grade + %(w_text)s * coalesce(s.text_rank"
                " / nullif(max(s.text_rank) OVER (), 0), 0) + %(w_path)s * coalesce(s.path_rank"
                " / nullif(max(s.path_rank) OVER (), 0), 0) + %(w_semantic)s * s.near"
                " + %(w_quality)s * s.quality + %(w_recency)s * s.recency AS estimate"
                f"{extra} FROM exact_{i} s JOIN {MEMORIES} m ON m.id = s.id"
            )
        if left_out:
            left.append(
                f"SELECT {columns}, {i} AS source, true AS tag_match, 0.0::float8 AS grade,"
                f" 0.0::float8 AS text_rank, 0.0::float8 AS path_rank, {quality} AS quality,"
                f" false AS usable, 0.0::float8 AS estimate{extra}"
                f" FROM (SELECT p.id FROM pool_{i} p"
                " WHERE p.key IS NOT NULL AND NOT p.usable ORDER BY p.confidence DESC, p.id"
                f" LIMIT %(left_out)s) AS p JOIN {MEMORIES} m ON m.id = p.id"
            )
    order = "quality DESC" if ranking is None else "estimate DESC, quality DESC"
    body = (
        f"SELECT * FROM ({' UNION ALL '.join(ranked)}) AS ranked"
        f" ORDER BY tag_match DESC, {order}, rank_confidence DESC, rank_id LIMIT %(size)s"
    )
    if left:
        body = f"SELECT * FROM ({body}) AS ranked UNION ALL {' UNION ALL '.join(left)}"
    if meaning is not None:
        # The vectors of the rows returned only: a row's content hash finds its fresh vector.
        body = (
            "SELECT ranked.*, array_send(e.vector) AS embedding"
            f" FROM ({body}) AS ranked LEFT JOIN {EMBEDDINGS} e ON e.memory_id = ranked.id"
            " AND e.model = %(model)s AND e.content_hash = ranked.embedded_hash"
        )
    return f"WITH {', '.join(ctes)}\n{body}", params


class Cancelled(Exception):
    """PostgreSQL cancelled the statement at its timeout."""


def fetch_dicts(
    sql: str,
    params: dict[str, Any],
    *,
    timeout_ms: float | None = None,
    generic: bool = False,
) -> list[dict[str, Any]]:
    """Run a statement with server-side parameters (arrays and the intent are sent as values,
    not spliced into the text); logged like any query.

    ``generic``: the statement is prepared on the connection and run with its generic plan,
    planned once: the candidate query's text is the same for every task of a kind (its
    values are parameters, its lookups go through the indexes whatever they are), and
    planning it cost a fifth of running it.

    With ``timeout_ms``, PostgreSQL cancels the statement at that deadline (Cancelled is
    raised). The settings (the timeout, no JIT) are set, the statement run and the settings
    reset in one pipeline: one round trip, and a cancelled statement rolls the settings back
    with it. Inside a transaction a savepoint keeps the cancellation from aborting the rest
    of it."""
    connection = replicas.read_connection()  # a replica's, for a reading request
    connection.ensure_connection()
    inside = (
        transaction.atomic(using=connection.alias) if connection.in_atomic_block else nullcontext()
    )
    timeout = str(max(1, int(timeout_ms))) if timeout_ms is not None else None
    try:
        with (
            inside,
            server_cursor(using=connection) as setting,
            server_cursor(prepare=generic, using=connection) as cursor,
            server_cursor(using=connection) as reset,
            connection.connection.pipeline(),
        ):
            # No JIT: the statement's estimated cost (one small sum per pooled row) would
            # have PostgreSQL compile it for far longer than it runs.
            setting.execute(
                "SELECT set_config('jit', 'off', false), set_config('statement_timeout',"
                " coalesce(%s::text, current_setting('statement_timeout')), false),"
                " set_config('plan_cache_mode', %s, false)",
                [timeout, "force_generic_plan" if generic else "auto"],
            )
            cursor.execute(sql, params)
            # RESET, not set_config from pg_settings: reading that view costs milliseconds.
            for name in ("jit", "statement_timeout", "plan_cache_mode"):
                reset.execute(f"RESET {name}")
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
