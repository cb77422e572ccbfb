"""Keeping the pairs a comparison found (knowledge.pairs) or a judge answered
(knowledge.judged): new ones, reopened ones, updated open ones, and closing the open ones no
longer flagged. Pairs are written in key order and locked in id order (memories.locks)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.models.constants import OnConflict
from django.utils import timezone

from knowledge import contradictions
from knowledge.models import MemoryPair, PairKind, PairStatus, Resolution
from memories.metrics import PAIRS as PAIRS_SEEN


@dataclass
class Row:
    id: int
    project_id: int | None
    content: str
    content_hash: str
    tags: list[str]
    vector: np.ndarray | None
    # What losing it would cost (``priority``): how sure, how used, what kind, how warm.
    weight: float = 1.0


# What a pair's review is worth: how sure its finding is (knowledge.contradictions.STRENGTH,
# a judge's answer, a repeat) times what the weightier of its memories is worth.
REPEAT_STRENGTH = 0.5
JUDGE_STRENGTH = 0.75
# A memory's weight in SQL: its confidence, its type, its tier and how often it was given.
WEIGHT_SQL = """(m.confidence
    * CASE m.type WHEN 'warning' THEN 1.0 WHEN 'pattern' THEN 0.9 WHEN 'context' THEN 0.8
        ELSE 0.7 END
    * CASE m.tier WHEN 'hot' THEN 1.0 WHEN 'warm' THEN 0.85 WHEN 'cold' THEN 0.7 ELSE 0.5 END
    * (1 + least(1.0, log(1 + m.access_count) / 3)))"""


def priority(first: Row, second: Row, verdict: contradictions.Verdict) -> float:
    """How likely times how consequential: the review queue's order."""
    if verdict.evidence.get("class") == "judge":
        strength = JUDGE_STRENGTH
    elif verdict.kind == PairKind.REPEAT:
        strength = REPEAT_STRENGTH
    else:
        strength = float(verdict.evidence.get("strength", 0.6))  # type: ignore[arg-type]
    return round(strength * max(first.weight, second.weight), 4)


def as_found(pair: MemoryPair, read: dict[int, Row]) -> bool:
    """Whether both memories of ``pair`` say what they said when it was found or decided."""
    left, right = read.get(pair.first_id), read.get(pair.second_id)
    return (
        left is not None
        and right is not None
        and (pair.first_hash, pair.second_hash) == (left.content_hash, right.content_hash)
    )


def keep(
    verdicts: dict[tuple[int, int], tuple[Row, Row, contradictions.Verdict]],
    known: Sequence[MemoryPair],
    read: dict[int, Row],
    found_by: str,
    recheck: bool = False,
) -> dict[int | None, int]:
    """Write the pairs found: new ones, reopened ones (their words changed since a
    decision), updated open ones; and close the open ``known`` pairs that are no longer
    flagged because their words changed (an agent's proposal waits for a reviewer)."""
    now = timezone.now()
    existing = {(pair.first_id, pair.second_id): pair for pair in known}
    new: list[MemoryPair] = []
    changed: list[MemoryPair] = []
    counts: dict[int | None, int] = {}

    def count(pair: MemoryPair) -> None:
        counts[pair.project_id] = counts.get(pair.project_id, 0) + 1

    for key, (first, second, verdict) in sorted(verdicts.items()):
        values: dict[str, Any] = {
            "kind": verdict.kind,
            "priority": priority(first, second, verdict),
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
        if as_found(pair, read) and not (recheck and pair.status == PairStatus.OPEN):
            continue  # a decision holds while the words do, and an open pair is as found
        if pair.status != PairStatus.OPEN:
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
            PAIRS_SEEN.labels(verdict.kind, "found").inc()
        if pair.status == PairStatus.OPEN and "supersede" in pair.evidence:
            # An agent's proposal waiting for a reviewer stays on the pair.
            values["kind"] = pair.kind
            values["evidence"] = {**verdict.evidence, "supersede": pair.evidence["supersede"]}
        for name, value in values.items():
            setattr(pair, name, value)
        pair.updated_at = now
        changed.append(pair)
    for pair in known:
        key = (pair.first_id, pair.second_id)
        if pair.status != PairStatus.OPEN or key in verdicts or "supersede" in pair.evidence:
            continue
        if pair.first_id not in read or pair.second_id not in read:
            continue  # one has left (archived): nothing to judge
        same_words = as_found(pair, read)
        if same_words and not recheck:
            continue  # the same words: still as found
        pair.status = PairStatus.RESOLVED
        pair.resolution = Resolution.CHANGED
        pair.resolved_actor = found_by
        pair.resolved_at = now
        pair.reason = (
            "Read again: no longer flagged."
            if same_words
            else "The words changed: no longer alike."
        )
        pair.updated_at = now
        changed.append(pair)
        count(pair)
        PAIRS_SEEN.labels(pair.kind, "resolved").inc()
    if new:
        # In key order (as verdicts are sorted): a twin insert waits on the first one's, and
        # only the pairs this insert added are counted.
        for pair in _inserted(new):
            count(pair)
            PAIRS_SEEN.labels(pair.kind, "found").inc()
    if changed:
        # Locked in id order first (the UPDATE alone would lock them in its plan's order): two
        # finds that change the same pairs then wait for each other instead of deadlocking.
        changed.sort(key=lambda pair: pair.pk)
        list(
            MemoryPair.objects.select_for_update(no_key=True)
            .filter(pk__in=[pair.pk for pair in changed])
            .order_by("pk")
            .values_list("pk")
        )
        MemoryPair.objects.bulk_update(
            changed,
            [
                "kind",
                "priority",
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


def _inserted(pairs: list[MemoryPair]) -> list[MemoryPair]:
    """Insert ``pairs``, skipping those another writer inserted first (``ON CONFLICT DO
    NOTHING``), and answer the ones this insert added. ``bulk_create(ignore_conflicts=True)``
    answers every object it was given, inserted or not; the insert below is the one it
    makes, with a ``RETURNING`` of the rows it added."""
    fields = [f for f in MemoryPair._meta.concrete_fields if not f.generated and not f.primary_key]
    rows = MemoryPair.objects._insert(  # type: ignore[attr-defined]
        pairs,
        fields=fields,
        on_conflict=OnConflict.IGNORE,
        returning_fields=[MemoryPair._meta.get_field(name) for name in ("first", "second")],
    )
    added = {tuple(row) for row in rows or () if row}  # one object: [None] when skipped
    return [pair for pair in pairs if (pair.first_id, pair.second_id) in added]
