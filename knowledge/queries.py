"""Reads of what the knowledge layer keeps: the open pairs among memories, a memory's marks
in lists, and both sides of a pair as a reviewer weighs them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from knowledge.models import MemoryPair, PairStatus
from memories import replicas
from memories.models import Memory, MemoryEvent, RunMemory
from memories.models.choices import sql_literal
from memories.selectors import memory_history

_OPEN_PAIRS = (
    f"SELECT id, kind, first_id, second_id FROM {MemoryPair._meta.db_table}"
    f" WHERE status = {sql_literal(PairStatus.OPEN)}"
    " AND first_id = ANY(%(ids)s::bigint[]) AND second_id = ANY(%(ids)s::bigint[])"
    " ORDER BY id"
)


def open_pairs_among(memory_ids: Sequence[int]) -> list[tuple[int, str, int, int]]:
    """The open pairs (id, kind, first, second) both of whose memories are in ``memory_ids``,
    in one statement through the open-pair index."""
    ids = sorted(set(memory_ids))
    if len(ids) < 2:
        return []
    with replicas.read_connection().cursor() as cursor:
        cursor.execute(_OPEN_PAIRS, {"ids": ids})
        return [(row[0], row[1], row[2], row[3]) for row in cursor.fetchall()]


@dataclass(frozen=True)
class PairFlag:
    """An open pair a memory is in, as its row shows it ("repeats #12")."""

    pair_id: int
    kind: str
    other_id: int


def open_pairs(queryset: QuerySet[MemoryPair] | None = None) -> QuerySet[MemoryPair]:
    """Pairs still to decide: open, both memories active (an archived one has left)."""
    pairs = MemoryPair.objects.all() if queryset is None else queryset
    return pairs.filter(status=PairStatus.OPEN, first__active=True, second__active=True)


def pair_flags(memory_ids: Sequence[int]) -> dict[int, list[PairFlag]]:
    """The open pairs of each of ``memory_ids``, in one query."""
    ids = list(memory_ids)
    flags: dict[int, list[PairFlag]] = {}
    if not ids:
        return flags
    rows = (
        open_pairs()
        .filter(Q(first_id__in=ids) | Q(second_id__in=ids))
        .order_by("id")
        .values_list("id", "kind", "first_id", "second_id")
    )
    wanted = set(ids)
    for pair_id, kind, first, second in rows:
        for memory_id, other in ((first, second), (second, first)):
            if memory_id in wanted:
                flags.setdefault(memory_id, []).append(PairFlag(pair_id, kind, other))
    return flags


@dataclass(frozen=True)
class PairSide:
    """One memory of a pair as its page shows it: the memory, its runs' outcomes, its
    latest history, and the spans of its words the evidence says disagree (offsets, while
    its words are those judged)."""

    memory: Memory
    outcomes: dict[str, int]
    history: list[MemoryEvent]
    spans: tuple[tuple[int, int], ...] = ()


def pair_sides(pair: MemoryPair, *, history: int = 10) -> list[PairSide]:
    """Both memories of ``pair``, first then second, with what a reviewer weighs them by."""
    memories = (
        Memory.objects.defer("search_vector", "match_keys")
        .select_related("approved_by", "source_run")
        .in_bulk(pair.memory_ids)
    )
    outcomes: dict[int, dict[str, int]] = {}
    for memory_id, run_status, count in (
        RunMemory.objects.filter(memory_id__in=pair.memory_ids)
        .values_list("memory_id", "run__status")
        .annotate(n=Count("id"))
        .order_by()
    ):
        outcomes.setdefault(memory_id, {})[run_status] = count
    return [
        PairSide(
            memories[memory_id],
            outcomes.get(memory_id, {}),
            list(memory_history(memory_id=memory_id)[:history]),
            _spans(pair, memories[memory_id], "firstSpan" if side == 0 else "secondSpan"),
        )
        for side, memory_id in enumerate(pair.memory_ids)
        if memory_id in memories
    ]


def _spans(pair: MemoryPair, memory: Memory, key: str) -> tuple[tuple[int, int], ...]:
    """The evidence's spans of ``memory``'s words, if they are still the words judged."""
    judged = pair.first_hash if key == "firstSpan" else pair.second_hash
    if memory.content_hash != judged:
        return ()
    found = []
    for differs in (pair.evidence or {}).get("differs", []):
        span = differs.get(key) if isinstance(differs, dict) else None
        if (
            isinstance(span, list)
            and len(span) == 2
            and all(isinstance(i, int) for i in span)
            and 0 <= span[0] < span[1] <= len(memory.content)
        ):
            found.append((span[0], span[1]))
    return tuple(sorted(set(found)))
