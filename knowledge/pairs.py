"""Finding repeats and possible conflicts among stored memories.

When a memory is written (``find``, from memories.history in the writing transaction) and,
for the store as it is, in a beat job (policies.conflicts, which calls ``find`` a batch at
a time), each memory is compared with a bounded set of candidates found through indexes,
never a scan:

* the active memories of its project, and global ones whose tags overlap its own, that
  hold one of its rarest words (the match-key GIN index that assembly keeps anyway), at
  most CANDIDATES;
* with pgvector, also its NEAREST neighbours by meaning (the HNSW index);
* the memories it has an open pair with whose words changed since (to see whether the new
  words settled it); a pair whose words are the same is as found, and is neither read nor
  written again.

The COMPARED closest of them in meaning (the cosine of the embeddings) are read side by
side (knowledge.contradictions), and the closest MAX_PAIRS flagged ones become open pairs
(MemoryPair). A pair
a reviewer dismissed stays dismissed while both say what they said then; an open pair whose
words changed so that it is no longer flagged is closed (resolution ``changed``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.db import connection, transaction
from django.db.models import Q

from knowledge import contradictions, embeddings, reading
from knowledge.judged import Undecided, outcome
from knowledge.keep import WEIGHT_SQL, Row, as_found, keep
from knowledge.models import MemoryEmbedding, MemoryPair, PairStatus
from memories.models import Memory, MemoryPolicy
from memories.models.choices import sql_literal
from memories.statements import server_cursor
from memories.statistics import COMMON_WORD_ROWS, word_rows

logger = logging.getLogger(__name__)

MEMORIES = Memory._meta.db_table
EMBEDDINGS = MemoryEmbedding._meta.db_table
PAIRS_TABLE = MemoryPair._meta.db_table
POLICIES = MemoryPolicy._meta.db_table
CANDIDATES = 20
NEAREST = 10
# How many index entries the HNSW search looks at before the project filter (hnsw.ef_search).
NEAREST_SEARCH = 200
# Of those, the closest in meaning are read word by word.
COMPARED = 8
PROBE_WORDS = 4
MAX_PAIRS = 3

_DEFAULTS = {
    "pair_similarity": MemoryPolicy._meta.get_field("pair_similarity").default,
    "repeat_overlap": MemoryPolicy._meta.get_field("repeat_overlap").default,
}


_OPEN = sql_literal(PairStatus.OPEN)
# In one statement: the memories to compare (active ones of ``ids``), with their policy's
# thresholds; and their candidates: up to CANDIDATES memories holding one of their
# PROBE_WORDS rarest words (by the table's statistics, memories.statistics: a common word's
# posting list is long, and one in more than COMMON_WORD_ROWS is never looked up), under
# their owner and, for a project memory, the global owner (the match-key GIN index); and
# the memories they have an open pair with whose words changed since it was found (a pair
# whose words are the same is as found: reading it again would only cost). Each row
# is (anchor, memory, ...): a memory to compare is its own anchor.
_FIND = f"""
WITH me AS (
    SELECT m.id, m.project_id, m.match_keys, m.content_hash,
        coalesce(m.project_id::text, 'g') AS owner
    FROM {MEMORIES} m WHERE m.id = ANY(%(ids)s::bigint[]) AND m.active
), probes AS (
    SELECT me.id, ARRAY(
        SELECT o.owner || substr(w.key, length(me.owner) + 1)
        FROM (
            SELECT key, coalesce(c.rows, 0) AS rows FROM unnest(me.match_keys) AS key
            LEFT JOIN unnest(%(known)s::text[], %(rows)s::float8[]) AS c(key, rows)
                USING (key)
            WHERE key LIKE me.owner || ':w:%%' AND coalesce(c.rows, 0) <= {COMMON_WORD_ROWS}
            ORDER BY coalesce(c.rows, 0), length(key) DESC, key LIMIT {PROBE_WORDS}
        ) AS w,
        unnest(CASE WHEN me.project_id IS NULL THEN ARRAY['g'] ELSE ARRAY[me.owner, 'g'] END)
            AS o(owner)
    ) AS probe FROM me
), found AS (
    SELECT p.id AS anchor, d.id FROM probes p, LATERAL (
        SELECT m.id FROM {MEMORIES} m
        WHERE m.match_keys && p.probe AND m.active AND m.id <> p.id
        LIMIT {CANDIDATES}
    ) AS d
    UNION
    SELECT me.id, pr.other FROM me CROSS JOIN LATERAL (
        SELECT second_id AS other, first_hash AS mine, second_hash AS theirs
        FROM {PAIRS_TABLE} WHERE first_id = me.id AND status = {_OPEN}
        UNION ALL
        SELECT first_id, second_hash, first_hash
        FROM {PAIRS_TABLE} WHERE second_id = me.id AND status = {_OPEN}
    ) AS pr JOIN {MEMORIES} o ON o.id = pr.other
    WHERE %(recheck)s OR (me.content_hash, o.content_hash) <> (pr.mine, pr.theirs)
    UNION
    SELECT me.id, me.id FROM me
)
SELECT f.anchor, m.id, m.project_id, m.content, m.content_hash, m.tags,
    array_send(e.vector), pol.pair_similarity, pol.repeat_overlap, {WEIGHT_SQL}
FROM found f JOIN {MEMORIES} m ON m.id = f.id AND m.active
LEFT JOIN {EMBEDDINGS} e ON e.memory_id = m.id AND e.model = %(model)s
    AND e.content_hash = m.content_hash
LEFT JOIN {POLICIES} pol ON f.anchor = f.id AND pol.project_id = m.project_id
"""


def _nearest(rows: Sequence[Row]) -> dict[int, list[int]]:
    """The memories nearest in meaning to each row (its project's and global ones), by the
    HNSW index: one statement for all the rows."""
    index = embeddings.nearest_index()
    asked = [row for row in rows if index is not None and row.vector is not None
             and len(row.vector) == index[1]]  # fmt: skip
    if index is None or not asked:
        return {}
    vector = f"vector({int(index[1])})"
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        # The index is searched before the project is filtered: a wider search keeps the
        # nearest of a small project among those of many others (pgvector's default is 40).
        cursor.execute(f"SET LOCAL hnsw.ef_search = {NEAREST_SEARCH}")
        cursor.execute(
            f"""SELECT q.id, n.memory_id
            FROM unnest(%(ids)s::bigint[], %(projects)s::bigint[], %(vectors)s::text[])
                AS q(id, project_id, vector)
            CROSS JOIN LATERAL (
                SELECT e.memory_id FROM {EMBEDDINGS} e
                WHERE e.model = %(model)s AND e.memory_id <> q.id
                    AND (e.project_id = q.project_id OR e.project_id IS NULL)
                ORDER BY e.vector::{vector} <=> q.vector::{vector}
                LIMIT {NEAREST}
            ) AS n""",
            {
                "model": index[0],
                "ids": [row.id for row in asked],
                "projects": [row.project_id for row in asked],
                "vectors": [
                    embeddings.vector_text(row.vector, "[]")
                    for row in asked
                    if row.vector is not None  # (all of them: asked has vectors)
                ],
            },
        )
        found: dict[int, list[int]] = {}
        for memory_id, near in cursor.fetchall():
            found.setdefault(memory_id, []).append(near)
    return found


@dataclass
class Found:
    """The memories to compare, each one's thresholds and candidates, and every row read."""

    rows: list[Row]
    limits: dict[int, dict[str, float]]
    candidates: dict[int, list[int]]
    read: dict[int, Row]


def _found(ids: Sequence[int], model: str, recheck: bool = False) -> Found:
    found = Found([], {}, {}, {})
    rows = word_rows()
    # Prepared: its plan does not depend on the values, and planning it cost as much as
    # running it.
    with server_cursor(prepare=True) as cursor:
        cursor.execute(
            _FIND,
            {
                "ids": list(ids),
                "model": model,
                "recheck": recheck,
                "known": list(rows),
                "rows": list(rows.values()),
            },
        )
        rows = cursor.fetchall()
    for (
        anchor,
        memory_id,
        project_id,
        content,
        content_hash,
        tags,
        raw,
        similarity,
        overlap,
        weight,
    ) in rows:
        if memory_id not in found.read:
            vector = embeddings.from_array_send(raw) if raw is not None else None
            found.read[memory_id] = Row(
                memory_id, project_id, content, content_hash, tags, vector, weight
            )
        if anchor == memory_id:
            found.rows.append(found.read[memory_id])
            found.limits[memory_id] = {
                "pair_similarity": _DEFAULTS["pair_similarity"]
                if similarity is None
                else similarity,
                "repeat_overlap": _DEFAULTS["repeat_overlap"] if overlap is None else overlap,
            }
        else:
            found.candidates.setdefault(anchor, []).append(memory_id)
    found.rows.sort(key=lambda row: row.id)
    nearest = _nearest(found.rows)
    missing = sorted({i for ids in nearest.values() for i in ids} - set(found.read))
    for row in _rows(missing, model):
        found.read[row.id] = row
    for memory_id, ids in nearest.items():
        found.candidates.setdefault(memory_id, []).extend(ids)
    return found


def _rows(ids: Sequence[int], model: str) -> list[Row]:
    """Rows of active memories of ``ids`` (the nearest by meaning, found apart)."""
    if not ids:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.id, m.project_id, m.content, m.content_hash, m.tags, array_send(e.vector),"
            f" {WEIGHT_SQL} FROM {MEMORIES} m LEFT JOIN {EMBEDDINGS} e ON e.memory_id = m.id"
            " AND e.model = %(model)s AND e.content_hash = m.content_hash"
            " WHERE m.id = ANY(%(ids)s::bigint[]) AND m.active",
            {"ids": list(ids), "model": model},
        )
        return [
            Row(i, p, c, h, t, embeddings.from_array_send(raw) if raw is not None else None, w)
            for i, p, c, h, t, raw, w in cursor.fetchall()
        ]


def _comparable(row: Row, other: Row) -> bool:
    """A project memory is compared with its project's memories, and with global ones
    whose tags overlap its own."""
    if row.project_id == other.project_id:
        return True
    if row.project_id is not None and other.project_id is not None:
        return False
    return bool(set(row.tags) & set(other.tags))


def _cosine(a: Row, b: Row) -> float | None:
    if a.vector is None or b.vector is None or a.vector.shape != b.vector.shape:
        return None
    return float(np.dot(a.vector, b.vector))


def _closest(
    row: Row, candidate_ids: Sequence[int], others: dict[int, Row], partners: set[int]
) -> list[tuple[Row, float | None]]:
    """The candidates worth reading word by word: comparable ones, the COMPARED closest in
    meaning (the first ones found, without embeddings), and always its open pairs'
    ``partners``."""
    found: list[tuple[Row, float | None]] = []
    for other_id in dict.fromkeys(candidate_ids):
        other = others.get(other_id)
        if other is not None and other.id != row.id and _comparable(row, other):
            found.append((other, _cosine(row, other)))
    found.sort(key=lambda item: -(item[1] if item[1] is not None else -1.0))
    return found[:COMPARED] + [item for item in found[COMPARED:] if item[0].id in partners]


def find(
    memory_ids: Sequence[int],
    *,
    found_by: str,
    recheck: bool = False,
    tally: Counter[str] | None = None,
    undecided: list[Undecided] | None = None,
) -> dict[int | None, int]:
    """Compare each of ``memory_ids`` (active ones) with its candidates and keep the pairs
    found (see the module); how many pairs were opened or closed, per project.

    Statements: one reads the memories, their thresholds and their candidates; one their
    pairs; then at most one INSERT, and one lock (pairs in id order, memories.locks) and one
    UPDATE (with pgvector, one nearest lookup more per memory)."""
    embedder = embeddings.configured()
    found = _found(sorted(set(memory_ids)), embedder.name if embedder else "", recheck)
    if not found.rows:
        return {}
    compared, read = [row.id for row in found.rows], list(found.read)
    # The pairs a verdict may touch: between a compared memory and one read with it.
    known = list(
        MemoryPair.objects.filter(
            Q(first_id__in=compared, second_id__in=read)
            | Q(second_id__in=compared, first_id__in=read)
        )
    )
    partners: dict[int, set[int]] = {}
    for pair in known:
        if pair.status == PairStatus.OPEN and (recheck or not as_found(pair, found.read)):
            for side in pair.memory_ids:
                partners.setdefault(side, set()).add(pair.other(side))
    verdicts: dict[tuple[int, int], tuple[Row, Row, contradictions.Verdict]] = {}
    frequent_words = _frequent_words()
    for row in found.rows:
        limits = found.limits[row.id]
        flagged = []
        candidates = found.candidates.get(row.id, [])
        common = _common(
            row, [found.read[i] for i in candidates if i in found.read], frequent_words
        )
        for other, cosine in _closest(row, candidates, found.read, partners.get(row.id, set())):
            first, second = (row, other) if row.id < other.id else (other, row)
            try:
                verdict = contradictions.compare(
                    first.content,
                    second.content,
                    cosine=cosine,
                    similarity=limits["pair_similarity"],
                    repeat_overlap=limits["repeat_overlap"],
                    common=common,
                )
            except Exception:  # a reading that fails never fails the write
                logger.exception("comparing memories %s and %s failed", first.id, second.id)
                continue
            if verdict.kind is not None:
                flagged.append((verdict.similarity, other, verdict))
            elif verdict.evidence.get("undecided") and undecided is not None:
                undecided.append(Undecided(first, second, verdict))
            if tally is not None:
                tally["compared"] += 1
                tally[outcome(verdict)] += 1
        flagged.sort(key=lambda item: (-item[0], item[1].id))
        for _, other, verdict in flagged[:MAX_PAIRS]:
            first, second = (row, other) if row.id < other.id else (other, row)
            verdicts[(first.id, second.id)] = (first, second, verdict)
        if tally is not None and len(flagged) > MAX_PAIRS:
            tally["beyond the limit"] += len(flagged) - MAX_PAIRS
    return keep(verdicts, known, found.read, found_by, recheck)


# A word in this share of a memory's neighbourhood (itself and its candidates, when there
# are at least COMMON_AMONG) is the neighbourhood's boilerplate ("[svn] ... branch : trunk"):
# it says nothing about whether two of them agree.
COMMON_SHARE = 0.6
COMMON_AMONG = 5


# A word in at least this many memories of the owner (by the table's statistics) tells two
# of them apart no better than "the" does.
FREQUENT_ROWS = 200


def _frequent_words() -> dict[str, set[str]]:
    """Each owner's words in at least FREQUENT_ROWS memories, and their stems, by the
    table's statistics: read once per comparison of a batch, not once per memory."""
    found: dict[str, set[str]] = {}
    for key, rows in word_rows().items():
        owner, _, word = key.partition(":w:")
        if rows >= FREQUENT_ROWS and word:
            found.setdefault(owner, set()).update((word, reading.stem(word)))
    return found


def _common(row: Row, candidates: Sequence[Row], frequent: dict[str, set[str]]) -> frozenset[str]:
    found = set(frequent.get(str(row.project_id) if row.project_id is not None else "g", ()))
    texts = [row, *{c.id: c for c in candidates}.values()]
    if len(texts) >= COMMON_AMONG:
        counts: Counter[str] = Counter()
        for text in texts:
            counts.update(reading.stems(text.content))
        found |= {word for word, n in counts.items() if n >= COMMON_SHARE * len(texts)}
    return frozenset(found)
