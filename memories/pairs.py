"""Finding repeats and possible conflicts among stored memories.

When a memory is written (``find``, from memories.history in the writing transaction) and,
for the store as it is, in a beat job (policies.conflicts, which calls ``find`` a batch at
a time), each memory is compared with a bounded set of candidates found through indexes,
never a scan:

* the active memories of its project, and global ones whose tags overlap its own, that
  hold one of its rarest words or one of its tag keys (the match-key GIN index that
  assembly keeps anyway), at most CANDIDATES;
* with pgvector, also its NEAREST neighbours by meaning (the HNSW index);
* the memories it already has an open pair with (to see whether new words settled it).

The COMPARED closest of them in meaning (the cosine of the embeddings) are read side by
side (memories.contradictions), and the closest MAX_PAIRS flagged ones become open pairs
(MemoryPair). A pair
a reviewer dismissed stays dismissed while both say what they said then; an open pair whose
words changed so that it is no longer flagged is closed (resolution ``changed``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from memories import contradictions, embeddings
from memories.metrics import PAIRS
from memories.models import (
    Memory,
    MemoryEmbedding,
    MemoryPair,
    MemoryPolicy,
    PairStatus,
    Resolution,
)

logger = logging.getLogger(__name__)

MEMORIES = Memory._meta.db_table
EMBEDDINGS = MemoryEmbedding._meta.db_table
CANDIDATES = 60
NEAREST = 10
# Of those, the closest in meaning are read word by word.
COMPARED = 20
PROBE_WORDS = 6
MAX_PAIRS = 5

_DEFAULTS = {
    "pair_similarity": MemoryPolicy._meta.get_field("pair_similarity").default,
    "repeat_overlap": MemoryPolicy._meta.get_field("repeat_overlap").default,
}


@dataclass
class Row:
    id: int
    project_id: int | None
    content: str
    content_hash: str
    tags: list[str]
    match_keys: list[str]
    vector: np.ndarray | None


_ROWS = f"""
    SELECT m.id, m.project_id, m.content, m.content_hash, m.tags, m.match_keys,
        array_send(e.vector) AS embedding
    FROM {MEMORIES} m LEFT JOIN {EMBEDDINGS} e ON e.memory_id = m.id
        AND e.model = %(model)s AND e.content_hash = m.content_hash
    WHERE m.id = ANY(%(ids)s::bigint[]) AND m.active"""
# Candidates of each memory through the match-key index (its owners' keys only), at most
# CANDIDATES each, in one statement for a whole batch.
_BY_KEYS = f"""
    SELECT a.id, d.id
    FROM jsonb_to_recordset(%(anchors)s::jsonb) AS a(id bigint, probe text[]),
    LATERAL (
        SELECT m.id FROM {MEMORIES} m
        WHERE m.match_keys && a.probe AND m.active AND m.id <> a.id
        LIMIT {CANDIDATES}
    ) AS d"""


def _rows(ids: Sequence[int], model: str) -> list[Row]:
    if not ids:
        return []
    with connection.cursor() as cursor:
        cursor.execute(_ROWS, {"ids": list(ids), "model": model})
        found = cursor.fetchall()
    rows = []
    for memory_id, project_id, content, content_hash, tags, keys, raw in found:
        vector = embeddings.from_array_send(raw) if raw is not None else None
        rows.append(Row(memory_id, project_id, content, content_hash, tags, keys, vector))
    return rows


def _probe(row: Row) -> list[str]:
    """The keys to look candidates up by: the memory's longest (so rarest) words and its tag
    keys, under its own owner and, for a project memory, the global owner's."""
    owner = "g" if row.project_id is None else str(row.project_id)
    words, tags = [], []
    for key in row.match_keys:
        rest = key[len(owner) + 1 :]
        if rest.startswith("w:"):
            words.append(rest)
        else:
            tags.append(rest)
    words = sorted(words, key=lambda w: (-len(w), w))[:PROBE_WORDS]
    owners = [owner] if owner == "g" else [owner, "g"]
    return [f"{o}:{key}" for o in owners for key in (*words, *tags)]


def _nearest(row: Row) -> list[int]:
    index = embeddings.nearest_index()
    if index is None or row.vector is None or len(row.vector) != index[1]:
        return []
    vector = f"vector({int(index[1])})"
    where = "e.project_id IS NULL" if row.project_id is None else "(e.project_id = %(project)s"
    where += "" if row.project_id is None else " OR e.project_id IS NULL)"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT e.memory_id FROM {EMBEDDINGS} e WHERE e.model = %(model)s AND {where}"
            f" AND e.memory_id <> %(id)s ORDER BY e.vector::{vector} <=> %(vector)s::{vector}"
            f" LIMIT {NEAREST}",
            {
                "model": index[0],
                "project": row.project_id,
                "id": row.id,
                "vector": embeddings.vector_text(row.vector, "[]"),
            },
        )
        return [found for (found,) in cursor.fetchall()]


def _candidates(rows: Sequence[Row]) -> dict[int, list[int]]:
    anchors = [{"id": row.id, "probe": _probe(row)} for row in rows]
    found: dict[int, list[int]] = {row.id: [] for row in rows}
    with connection.cursor() as cursor:
        cursor.execute(_BY_KEYS, {"anchors": json.dumps(anchors)})
        for anchor, other in cursor.fetchall():
            found[anchor].append(other)
    for row in rows:
        found[row.id] += _nearest(row)
    return found


def _thresholds(project_ids: Iterable[int | None]) -> dict[int | None, dict[str, float]]:
    wanted = {pid for pid in project_ids if pid is not None}
    found: dict[int | None, dict[str, float]] = {None: dict(_DEFAULTS)}
    for project_id, similarity, overlap in MemoryPolicy.objects.filter(
        project_id__in=wanted
    ).values_list("project_id", "pair_similarity", "repeat_overlap"):
        found[project_id] = {"pair_similarity": similarity, "repeat_overlap": overlap}
    return {pid: found.get(pid, found[None]) for pid in {*wanted, None}}


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
    row: Row, candidate_ids: Sequence[int], others: dict[int, Row]
) -> list[tuple[Row, float | None]]:
    """The candidates worth reading word by word: comparable ones, the COMPARED closest in
    meaning (all of them, in lookup order, without embeddings)."""
    found: list[tuple[Row, float | None]] = []
    for other_id in dict.fromkeys(candidate_ids):
        other = others.get(other_id)
        if other is not None and other.id != row.id and _comparable(row, other):
            found.append((other, _cosine(row, other)))
    found.sort(key=lambda item: -(item[1] if item[1] is not None else -1.0))
    return found[:COMPARED]


def find(memory_ids: Sequence[int], *, found_by: str) -> dict[int | None, int]:
    """Compare each of ``memory_ids`` (active ones) with its candidates and keep the pairs
    found (see the module); how many pairs were opened or closed, per project."""
    embedder = embeddings.configured()
    model = embedder.name if embedder else ""
    rows = _rows(sorted(set(memory_ids)), model)
    if not rows:
        return {}
    candidates = _candidates(rows)
    open_pairs = list(
        MemoryPair.objects.filter(status=PairStatus.OPEN).filter(
            Q(first_id__in=candidates) | Q(second_id__in=candidates)
        )
    )
    for pair in open_pairs:
        for side in pair.memory_ids:
            if side in candidates:
                candidates[side].append(pair.other(side))
    others = {
        r.id: r for r in _rows(sorted({c for ids in candidates.values() for c in ids}), model)
    }
    others.update({row.id: row for row in rows})
    thresholds = _thresholds([row.project_id for row in rows])
    verdicts: dict[tuple[int, int], tuple[Row, Row, contradictions.Verdict]] = {}
    for row in rows:
        limits = thresholds[row.project_id]
        flagged = []
        for other, cosine in _closest(row, candidates[row.id], others):
            first, second = (row, other) if row.id < other.id else (other, row)
            try:
                verdict = contradictions.compare(
                    first.content,
                    second.content,
                    cosine=cosine,
                    similarity=limits["pair_similarity"],
                    repeat_overlap=limits["repeat_overlap"],
                )
            except Exception:  # a reading that fails never fails the write
                logger.exception("comparing memories %s and %s failed", first.id, second.id)
                continue
            if verdict.kind is not None:
                flagged.append((verdict.similarity, other, verdict))
        flagged.sort(key=lambda item: (-item[0], item[1].id))
        for _, other, verdict in flagged[:MAX_PAIRS]:
            first, second = (row, other) if row.id < other.id else (other, row)
            verdicts[(first.id, second.id)] = (first, second, verdict)
    return _keep(verdicts, open_pairs, {row.id for row in rows}, found_by)


def _keep(
    verdicts: dict[tuple[int, int], tuple[Row, Row, contradictions.Verdict]],
    open_pairs: Sequence[MemoryPair],
    compared: set[int],
    found_by: str,
) -> dict[int | None, int]:
    """Write the pairs found: new ones, reopened ones (their words changed since a
    decision), updated open ones; and close the open pairs of ``compared`` memories that
    are no longer flagged because their words changed."""
    now = timezone.now()
    existing = (
        {
            (pair.first_id, pair.second_id): pair
            for pair in MemoryPair.objects.filter(
                Q(*[Q(first_id=a, second_id=b) for a, b in verdicts], _connector=Q.OR)
            )
        }
        if verdicts
        else {}
    )
    new: list[MemoryPair] = []
    changed: list[MemoryPair] = []
    counts: dict[int | None, int] = {}

    def count(pair: MemoryPair) -> None:
        counts[pair.project_id] = counts.get(pair.project_id, 0) + 1

    for key, (first, second, verdict) in sorted(verdicts.items()):
        values: dict[str, Any] = {
            "kind": verdict.kind,
            "similarity": round(verdict.similarity, 4),
            "evidence": verdict.evidence,
            "first_hash": first.content_hash,
            "second_hash": second.content_hash,
        }
        pair = existing.get(key)
        if pair is None:
            project_id = first.project_id if first.project_id is not None else second.project_id
            new.append(
                MemoryPair(
                    first_id=first.id,
                    second_id=second.id,
                    project_id=project_id,
                    found_by=found_by,
                    **values,
                )
            )
            continue
        same_words = (pair.first_hash, pair.second_hash) == (
            first.content_hash,
            second.content_hash,
        )
        if pair.status != PairStatus.OPEN:
            if same_words:
                continue  # a decision holds while the words do
            values |= {
                "status": PairStatus.OPEN,
                "resolution": "",
                "outcome_memory": None,
                "resolved_by": None,
                "resolved_actor": "",
                "resolved_at": None,
                "reason": "",
                "found_by": found_by,
            }
            count(pair)
            PAIRS.labels(verdict.kind, "found").inc()
        if pair.status == PairStatus.OPEN and "supersede" in pair.evidence:
            # An agent's proposal waiting for a reviewer stays on the pair.
            values["kind"] = pair.kind
            values["evidence"] = {**verdict.evidence, "supersede": pair.evidence["supersede"]}
        for name, value in values.items():
            setattr(pair, name, value)
        pair.updated_at = now
        changed.append(pair)
    for pair in open_pairs:
        key = (pair.first_id, pair.second_id)
        if key in verdicts or not (set(pair.memory_ids) & compared):
            continue
        pair.status = PairStatus.RESOLVED
        pair.resolution = Resolution.CHANGED
        pair.resolved_actor = found_by
        pair.resolved_at = now
        pair.reason = "The words changed: no longer alike."
        pair.updated_at = now
        changed.append(pair)
        count(pair)
        PAIRS.labels(pair.kind, "resolved").inc()
    if new:
        for pair in MemoryPair.objects.bulk_create(new, ignore_conflicts=True):
            count(pair)
            PAIRS.labels(pair.kind, "found").inc()
    if changed:
        MemoryPair.objects.bulk_update(
            changed,
            [
                "kind",
                "similarity",
                "evidence",
                "first_hash",
                "second_hash",
                "status",
                "resolution",
                "outcome_memory",
                "resolved_by",
                "resolved_actor",
                "resolved_at",
                "reason",
                "found_by",
                "updated_at",
            ],
        )
    return counts
