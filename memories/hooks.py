"""The store's announcements, to the layers above it, which subscribe here (in their
``AppConfig.ready``); the store imports none of them.

* ``memories_written``, inside the writing transaction: the memories whose words are new
  and those that became active, so that what is read into a memory (its embedding, its
  repeats and conflicts: the knowledge layer) is read again and commits with it. A
  receiver that fails fails the write, as the write itself would.
* ``memories_changed``, after the change commits: the assembly cache drops what it holds
  for the projects named, the consolidation job queues the memories whose words changed
  for another comparison. A change rolled back is never announced. Receivers run in the
  committing process after the commit, each on its own: one that fails is logged and the
  others still run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.dispatch import Signal

logger = logging.getLogger(__name__)

# Sent with ``change``: a MemoriesChanged.
memories_changed = Signal()
# Sent with ``written``: a MemoriesWritten.
memories_written = Signal()


@dataclass(frozen=True)
class MemoriesWritten:
    """Memories to read again, in the writing transaction: those whose words are new (a new
    embedding, and another comparison), those that became active (another comparison),
    those whose content, summary or tags changed (the names they mention), and who wrote
    them (who found what the comparison finds)."""

    new_words: tuple[int, ...]
    activated: tuple[int, ...]
    actor_label: str
    # Those whose content, summary or tags changed (new words among them): what they name.
    new_names: tuple[int, ...] = ()


def reread(
    *,
    new_words: Iterable[int],
    activated: Iterable[int],
    actor_label: str,
    new_names: Iterable[int] = (),
) -> None:
    """Have the memories named read again, now, in the current transaction."""
    words = tuple(new_words)
    names = tuple(sorted({*words, *new_names}))
    written = MemoriesWritten(words, tuple(activated), actor_label, names)
    if written.new_words or written.activated or written.new_names:
        memories_written.send(sender=MemoriesWritten, written=written)


@dataclass(frozen=True)
class MemoriesChanged:
    """What a committed write changed: the projects whose memories it touched (None for
    global memories) and, for the row-by-row writes of the services, each memory's
    ``changes`` as its history row records them (``{field: [before, after]}``). A set-based
    job names only the projects."""

    project_ids: frozenset[int | None]
    changes: Mapping[int, Mapping[str, list[Any]]] = field(default_factory=dict)


def announce(
    project_ids: Iterable[int | None],
    changes: Mapping[int, Mapping[str, list[Any]]] | None = None,
) -> None:
    """Announce a change once the current transaction commits (at once outside one)."""
    change = MemoriesChanged(frozenset(project_ids), dict(changes or {}))
    if change.project_ids or change.changes:
        transaction.on_commit(lambda: _send(change))


def _send(change: MemoriesChanged) -> None:
    for receiver, result in memories_changed.send_robust(sender=MemoriesChanged, change=change):
        if isinstance(result, Exception):
            logger.error("A subscriber of memories_changed failed: %r", receiver, exc_info=result)
