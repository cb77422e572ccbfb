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
import math
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from django.db import OperationalError, connection, transaction

from assembly.scope import scope_keys
from memories.matching import scope_lookup, scope_params, tag_match
from memories.models import Memory, MemoryEmbedding, Scope
from memories.models.choices import sql_literal
from memories.statements import server_cursor
from memories.statistics import common_word_keys, common_word_rows, statistics, word_rows
from memories.tags import probe_keys
from memories.words import TaskWords, task_words, tsquery_literal

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


# BM25 (Okapi): each word of the task weighs by its rarity in the source's owner (IDF from
# its document frequency: ANALYZE's estimate for a word it lists, else the rows holding it,
# counted up to DF_COUNTED through the match-key index), and by how often the memory says it
# against the memory's length.
BM25_K1 = 1.2
BM25_B = 0.75
DF_COUNTED = 500
# A word's memories, counted up to DF_COUNTED through the match-key index. Each key is a
# parameter of its own, so that PostgreSQL plans the count for that very key (a key the
# statistics do not list is rare: an index lookup, never a scan stopped at the limit).
_DF_COUNT = (
    f"(SELECT count(*) FROM (SELECT 1 FROM {MEMORIES} d"
    " WHERE d.match_keys @> %({key})s::text[] AND d.active LIMIT " + str(DF_COUNTED) + ") AS x)"
)
# Counted frequencies, kept per process for the owner's version of its memories (assembly
# .cache: any write gives the owner a new one), so that a word is counted once per version.
DF_KEPT_VERSIONS = 256
_counted: OrderedDict[tuple[str, str], dict[str, float]] = OrderedDict()
_counted_lock = threading.Lock()


@dataclass(frozen=True)
class Term:
    """A word of the task: its IDF in the source's owner, and whether the intent and whether
    the write scope say it."""

    word: str
    idf: float
    df: float
    intent: bool
    path: bool


def document_frequencies(
    owner: str, words: Sequence[str], version: str | None = None
) -> dict[str, float]:
    """How many of ``owner``'s active memories hold each word: ANALYZE's estimate where it
    has one, else counted (up to DF_COUNTED) in one statement, and remembered for the
    owner's ``version`` when it is known."""
    common = common_word_rows(owner)
    known = word_rows()
    found: dict[str, float] = {}
    missing: list[str] = []
    with _counted_lock:
        kept = _counted.get((owner, version), {}) if version else {}
    for word in words:
        key = f"{owner}:w:{word}"
        df = common.get(key) or known.get(key) or kept.get(word)
        if df is None:
            missing.append(word)
        else:
            found[word] = float(df)
    if missing:
        params = {f"k{j}": [f"{owner}:w:{word}"] for j, word in enumerate(missing)}
        counts = ", ".join(_DF_COUNT.format(key=f"k{j}") for j in range(len(missing)))
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT ARRAY[{counts}]", params)
            counted = dict(zip(missing, map(float, cursor.fetchone()[0]), strict=True))
        found.update(counted)
        if version:
            with _counted_lock:
                _counted.setdefault((owner, version), {}).update(counted)
                _counted.move_to_end((owner, version))
                while len(_counted) > DF_KEPT_VERSIONS:
                    _counted.popitem(last=False)
    return found


def task_terms(owner: str, words: TaskWords, version: str | None = None) -> list[Term]:
    """The task's words with their IDF in ``owner`` (whose ``version`` of its memories,
    when known, lets counted frequencies be reused)."""
    docs = float(max(owner_stats(owner)[0], 1))
    frequencies = document_frequencies(owner, words.all, version)
    intent, path = set(words.intent), set(words.path)
    return [
        Term(
            word,
            round(math.log(1 + (docs - df + 0.5) / (df + 0.5)), 9),
            df,
            word in intent,
            word in path,
        )
        for word, df in ((word, frequencies[word]) for word in words.all)
    ]


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


def _length_norm(i: int) -> str:
    """BM25's saturation of one occurrence in memory ``m`` for its length."""
    return (
        f"{BM25_K1 + 1} / (1 + {BM25_K1} * ({1 - BM25_B} + {BM25_B}"
        f" * length(m.search_vector) / %(avgdl_{i})s::float8))"
    )


def _presence(i: int, terms: Sequence[Term], part: str, params: dict[str, Any]) -> str:
    """BM25 of ``part`` (intent or path) counting each word once: a memory holds it or not
    (one probe of its search vector a word; the shortlist's first estimate)."""
    sums = []
    for j, term in enumerate(terms):
        if getattr(term, part) and term.idf > 0:
            params[f"tq_{i}_{j}"] = tsquery_literal(term.word)
            params[f"idf_{i}_{j}"] = term.idf
            sums.append(
                f"CASE WHEN m.search_vector @@ %(tq_{i}_{j})s::tsquery"
                f" THEN %(idf_{i}_{j})s::float8 ELSE 0 END"
            )
    if not sums:
        return "0.0::float8"
    return f"(({' + '.join(sums)}) * {_length_norm(i)})"


def _exact(i: int) -> str:
    """BM25 of the intent's and of the write scope's words with their counts in the memory."""
    saturation = (
        f"t.idf * cardinality(u.positions) * {BM25_K1 + 1} / (cardinality(u.positions)"
        f" + {BM25_K1} * ({1 - BM25_B} + {BM25_B}"
        f" * length(m.search_vector) / %(avgdl_{i})s::float8))"
    )
    return (
        f"(SELECT coalesce(sum({saturation}) FILTER (WHERE t.intent), 0) AS intent,"
        f" coalesce(sum({saturation}) FILTER (WHERE t.path), 0) AS path"
        f" FROM unnest(m.search_vector) AS u JOIN unnest(%(t_word_{i})s::text[],"
        f" %(t_idf_{i})s::float8[], %(t_intent_{i})s::bool[], %(t_path_{i})s::bool[])"
        " AS t(word, idf, intent, path) ON t.word = u.lexeme)"
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
            f"(SELECT f.id, f.usable, f.key, {i} AS source FROM (SELECT key, max(grade) AS best"
            f" FROM unnest(%(sk_key_{i})s::text[], %(sk_grade_{i})s::float8[]) AS k(key, grade)"
            " GROUP BY key ORDER BY best DESC, key) AS k CROSS JOIN LATERAL"
            f" (SELECT m.id, {_USABLE} AS usable, k.key FROM {MEMORIES} m"
            f" WHERE m.match_keys @> ARRAY[k.key] AND {source.key_filter} AND m.active"
            f" LIMIT {SCOPE_POOL}) AS f LIMIT {SCOPE_POOL})",
        ]
        # Matches of tags the keys cannot grade (other globs), and of the scope's own globs.
        other = f" AND m.match_keys && %(other_{i})s::text[]" if probe.anchored else ""
        scoped = source.key_filter if probe.anchored else source.condition
        found.append(
            f"(SELECT m.id, {_USABLE} AS usable, '' AS key, {i} AS source FROM {MEMORIES} m"
            f" WHERE {scoped} AND m.active{other} AND {matches} LIMIT {SCOPE_POOL})"
        )

        def usable(where: str, i: int = i) -> str:
            return (
                f"SELECT m.id, true AS usable, NULL::text AS key, {i} AS source"
                f" FROM {MEMORIES} m WHERE {where} AND {_USABLE}"
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
        ctes.append(f"found_{i} AS ({' UNION ALL '.join(found)})")
        ctes.append(
            f"pool_{i} AS (SELECT id, bool_or(usable) AS usable,"
            f" bool_or(key IS NOT NULL) AS matched FROM found_{i} GROUP BY id)"
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
        tag_matched = f"(p.matched OR {matches})"
        quality = "m.confidence * m.relevance_score"
        if ranking is None:
            ranked.append(
                f"SELECT {columns}, {i} AS source, {tag_matched} AS tag_match,"
                f" coalesce(g.grade, 0.0) AS grade, 0.0::float8 AS text_rank,"
                f" 0.0::float8 AS path_rank, {quality} AS quality, true AS usable,"
                f" 0.0::float8 AS estimate{extra}"
                f" FROM pool_{i} p JOIN {MEMORIES} m ON m.id = p.id"
                f" LEFT JOIN graded_{i} g ON g.id = p.id WHERE p.usable"
            )
        else:
            recency = (
                "CASE WHEN %(half_life)s > 0 THEN exp(-ln(2) * greatest(floor(extract(epoch"
                " FROM %(now)s) / 86400) - floor(extract(epoch FROM m.created_at) / 86400), 0)"
                " / %(half_life)s) ELSE 0 END"
            )
            ctes.append(
                f"first_{i} AS (SELECT p.id, {tag_matched} AS tag_match,"
                f" coalesce(g.grade, 0.0) AS grade, {_presence(i, terms, 'intent', params)}"
                f" AS intent, {_presence(i, terms, 'path', params)} AS path,"
                f" {near} AS near, {quality} AS quality, {recency} AS recency,"
                f" m.confidence FROM pool_{i} p JOIN {MEMORIES} m ON m.id = p.id"
                f" LEFT JOIN graded_{i} g ON g.id = p.id WHERE p.usable)"
            )
            ctes.append(
                f"short_{i} AS (SELECT * FROM first_{i} ORDER BY tag_match DESC,"
                " %(w_scope)s * grade + %(w_text)s * coalesce(intent / nullif(max(intent)"
                " OVER (), 0), 0) + %(w_path)s * coalesce(path / nullif(max(path) OVER (), 0),"
                " 0) + %(w_semantic)s * near + %(w_quality)s * quality"
                " + %(w_recency)s * recency DESC, confidence DESC, id LIMIT %(shortlist)s)"
            )
            if terms:
                exact = f"CROSS JOIN LATERAL {_exact(i)} AS x"
                text_rank, path_rank = "x.intent", "x.path"
            else:
                exact, text_rank, path_rank = "", "0.0::float8", "0.0::float8"
            ctes.append(
                f"exact_{i} AS (SELECT s.*, {text_rank} AS text_rank, {path_rank} AS path_rank"
                f" FROM short_{i} s JOIN {MEMORIES} m ON m.id = s.id {exact})"
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
                f" FROM (SELECT p.id FROM pool_{i} p JOIN {MEMORIES} c ON c.id = p.id"
                " WHERE p.matched AND NOT p.usable ORDER BY c.confidence DESC, p.id"
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
