"""The one order in which every writer of the store takes row locks, and the retry that
absorbs what slips past it.

PostgreSQL's advice on deadlocks is the design: take locks in one consistent order; retrying
only absorbs the rest. Every writer here (the services, the history, pair finding, access
counts, the policy jobs) follows this order:

1. **Memories, by id ascending**, with ``FOR NO KEY UPDATE`` (``lock_memories``, or
   ``ORDER BY id FOR NO KEY UPDATE`` in SQL, ``LOCK_IDS``). An UPDATE that was not preceded
   by such a lock would lock its rows in whatever order its plan reads them (on a small
   table, the order they lie on disk), so set-based writers lock first, in id order, or
   skip what another holds (``SKIP LOCKED``: it never waits, so it never closes a cycle).
   ``NO KEY`` matters: a foreign-key check of a row that points at a memory (an embedding,
   a merge survivor) locks it ``FOR KEY SHARE``, which ``FOR UPDATE`` waits for and
   ``FOR NO KEY UPDATE`` does not. Only a DELETE needs ``FOR UPDATE`` (memories_delete, in
   id order too).
2. **Then the run** (``FOR NO KEY UPDATE``): a run's outcome locks the memories it was
   given, then the run; a run being given memories locks the run and locks no memory.
3. **Then what hangs off memories**: pairs (by id), embeddings, history rows. Rows inserted
   that point at memories go in memory-id order, since PostgreSQL checks (and locks) what
   they reference at COMMIT, in insert order (this project's foreign keys are deferred).

An idempotency record is taken before all of these, but it waits only on a twin request
that holds nothing else. ``retried`` runs an outermost writer once more after a deadlock or
a serialization failure: a safety net, counted in ``memory_lock_retries_total``, never the
fix (PostgreSQL's log must show no "deadlock detected").
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable
from typing import Any, ParamSpec, TypeVar

from django.db import DatabaseError, connection
from django.db.models import QuerySet

from memories.metrics import LOCK_RETRIES
from memories.models import Memory

logger = logging.getLogger(__name__)

MEMORIES = Memory._meta.db_table
# PostgreSQL's codes for a transaction it rolled back to break a cycle, or because a
# concurrent one made its reads stale: sending it again is safe.
RETRYABLE = {"40P01": "deadlock", "40001": "serialization"}

P = ParamSpec("P")
R = TypeVar("R")


def lock_memories(ids: Iterable[int] | QuerySet[Any, Any]) -> QuerySet[Memory]:
    """The memories of ``ids`` (or of a subquery of ids), to be locked when evaluated (in a
    transaction), in id order."""
    chosen = ids if isinstance(ids, QuerySet) else sorted(set(ids))
    return (
        Memory.objects.select_for_update(of=("self",), no_key=True)
        .filter(id__in=chosen)
        .order_by("id")
    )


def lock_ids(name: str, where: str, *, skip_locked: bool = False) -> str:
    """A CTE ``name`` that locks the memories where ``where`` (SQL over their ``id``) holds,
    in id order; a set-based UPDATE joins it (``m.id = name.id``), so that it changes only
    rows it already locked in order."""
    skip = " SKIP LOCKED" if skip_locked else ""
    return (
        f"{name} AS MATERIALIZED (\n    SELECT id FROM {MEMORIES} WHERE {where}\n"
        f"    ORDER BY id FOR NO KEY UPDATE{skip}\n)"
    )


def _retryable(error: BaseException) -> str | None:
    while error is not None:
        reason = RETRYABLE.get(getattr(error, "sqlstate", None) or "")
        if reason:
            return reason
        error = error.__cause__  # type: ignore[assignment]
    return None


def retried(function: Callable[P, R]) -> Callable[P, R]:
    """Run ``function`` again, once, when PostgreSQL rolled it back for a deadlock or a
    serialization failure. Only where it is the outermost transaction: inside another one,
    the rolled-back transaction is that one's, so the error goes up to whoever began it."""

    @functools.wraps(function)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        if connection.in_atomic_block:
            return function(*args, **kwargs)
        try:
            return function(*args, **kwargs)
        except DatabaseError as error:
            reason = _retryable(error)
            if reason is None:
                raise
            LOCK_RETRIES.labels(reason).inc()
            logger.warning("%s rolled back (%s); running it once more", function.__name__, reason)
            return function(*args, **kwargs)

    return run


def retried_call(function: Callable[..., R], *args: Any, **kwargs: Any) -> R:
    """``function(*args, **kwargs)``, retried as ``retried`` says."""
    return retried(function)(*args, **kwargs)
