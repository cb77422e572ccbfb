"""Runs: started by an agent, given memories, finished with an outcome that moves them.

Locks follow the store's one order (memories.locks): an outcome locks the run's memories in
id order, then the run; a give locks the run only (its rows' foreign-key checks lock the
memories FOR KEY SHARE at commit, in memory-id order, which no writer of memories waits for).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.db.models import Case, F, Q, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from memories.actors import Actor
from memories.locks import lock_memories, retried
from memories.models import EventAction, Memory, Outcome, Project, Run, RunMemory, RunStatus
from memories.services.changes import ChangeResult, change_memories
from memories.services.validation import (
    Conflict,
    choice,
    clamp_confidence,
    scrubbed,
    secrets_mode,
)
from memories.text import clean_write_scope, strip_control_characters

OUTCOME_STEP = 0.1


def run_start(
    *,
    project: Project,
    external_id: str,
    actor: Actor,
    task_title: str = "",
    write_scope: Sequence[str] = (),
) -> tuple[Run, bool]:
    """Start a run, or return the one already started with this external id (an agent's retry).

    Returns (run, created). Starting again with another title or write scope is a Conflict.
    """
    if not isinstance(external_id, str):
        raise ValidationError({"external_id": "A run needs an external id."})
    external_id = strip_control_characters(external_id).strip()
    if not external_id:
        raise ValidationError({"external_id": "A run needs an external id."})
    text = scrubbed(
        {
            "external_id": external_id,
            "task_title": strip_control_characters(task_title).strip(),
            "write_scope": clean_write_scope(write_scope),
        },
        secrets_mode(project),
    )
    run = Run(project=project, **text)
    run.full_clean(validate_unique=False, validate_constraints=False)
    try:
        with transaction.atomic():
            run.save()
        return run, True
    except IntegrityError:
        existing = Run.objects.get(project=project, external_id=external_id)
    if (existing.task_title, existing.write_scope) != (run.task_title, run.write_scope):
        raise Conflict(
            f"Run {external_id!r} was already started with another title or write scope."
        )
    return existing, False


@retried
@transaction.atomic
def run_give_memories(
    *,
    run: Run,
    ranked: Sequence[tuple[int, float] | tuple[int, float, dict[str, float]]],
    prompt_hash: str = "",
    request: dict[str, Any] | None = None,
) -> list[RunMemory]:
    """Record which memories (id, score and, when known, the score's parts; best first) a
    run was given, so its outcome moves them (and a fit of the ranking learns from them);
    and ``request``, what it asked the assembly for (the first one a run made is kept)."""
    # The lock orders this against a concurrent outcome of the same run.
    status = (
        Run.objects.select_for_update(no_key=True).values_list("status", flat=True).get(pk=run.pk)
    )
    if status != RunStatus.RUNNING:
        raise Conflict(f"Run {run.external_id} has finished; it can be given nothing more.")
    given = [
        RunMemory(
            project_id=run.project_id,
            run=run,
            memory_id=memory_id,
            rank=rank,
            score=score,
            parts=dict(parts[0]) if parts else {},
        )
        for rank, (memory_id, score, *parts) in enumerate(ranked, start=1)
    ]
    # In memory-id order, as every write that names memories (memories.locks).
    RunMemory.objects.bulk_create(
        sorted(given, key=lambda row: row.memory_id), ignore_conflicts=True
    )
    changes: dict[str, Any] = {}
    if prompt_hash:
        changes["prompt_hash"] = run.prompt_hash = prompt_hash
    if request is not None:
        changes["context_request"] = Coalesce(
            F("context_request"), Value(request, output_field=models.JSONField())
        )
    if changes:
        Run.objects.filter(pk=run.pk).update(**changes)
    return given


@dataclass
class OutcomeResult:
    run: Run
    recorded: bool
    changes: ChangeResult
    # Given memories flagged for re-review that a success left as they were (paused).
    paused_ids: list[int] = field(default_factory=list)


MAX_USED_MEMORIES = 1000


def _used_memories(run: Run, used: Sequence[int] | None) -> list[int] | None:
    """The memories an outcome says the agent used, checked: each one of the run's project,
    or a global one."""
    if used is None:
        return None
    if len(used) > MAX_USED_MEMORIES:
        raise ValidationError(
            {"used_memory_ids": f"Name at most {MAX_USED_MEMORIES} memories the run used."}
        )
    ids = sorted(set(used))
    known = set(
        Memory.objects.filter(Q(project_id=run.project_id) | Q(project__isnull=True))
        .filter(pk__in=ids)
        .values_list("pk", flat=True)
    )
    unknown = [str(memory_id) for memory_id in ids if memory_id not in known]
    if unknown:
        shown = ", ".join(unknown[:10]) + (" ..." if len(unknown) > 10 else "")
        raise ValidationError(
            {
                "used_memory_ids": f"No memory with id {shown} in this project: name the"
                " memories of this project (or global ones) that the run used."
            }
        )
    return ids


def _note_used(run: Run, used: list[int]) -> None:
    """Keep what the agent used: on the run, and on each memory it was given."""
    run.used_memory_ids = used
    run.save(update_fields=["used_memory_ids"])
    RunMemory.objects.filter(run=run).update(
        used=Case(When(memory_id__in=used, then=Value(True)), default=Value(False))
    )


@retried
def run_record_outcome(
    *,
    run: Run,
    outcome: str,
    actor: Actor,
    now: datetime | None = None,
    used_memory_ids: Sequence[int] | None = None,
) -> OutcomeResult:
    """Move the confidence of every memory the run was given: +0.1 on success, -0.1 on failure.

    A memory flagged for re-review (by an agent or a code change: ``stale_at`` set) is paused:
    it gains nothing from a success until a reviewer approves it (a failure still lowers it);
    the result names it in ``paused_ids``. Clamped to [0, 1]; a memory below the project's
    deactivation threshold (0.2) becomes inactive. Recording the same outcome again changes
    nothing; a different outcome for a finished run is a Conflict.

    ``used_memory_ids``: the memories the agent used (of its project, or global), kept
    with the run and on what it was given for the fit of the ranking (assembly.learning);
    said once, with the outcome or with a repeat of it that said nothing yet.
    """
    outcome = choice(outcome, Outcome, "outcome")
    used = _used_memories(run, used_memory_ids)
    now = now or timezone.now()
    for attempt in range(1, GIVE_RACES + 1):
        try:
            return _record_outcome(run, outcome, actor, now, used, last=attempt == GIVE_RACES)
        except _GivenMeanwhile:
            continue
    raise AssertionError("unreachable: the last attempt never raises _GivenMeanwhile")


# Times an outcome starts again because the run was given more memories meanwhile.
GIVE_RACES = 3


class _GivenMeanwhile(Exception):
    """The run was given memories between locking its memories and locking it."""


def _record_outcome(
    run: Run, outcome: str, actor: Actor, now: datetime, used: list[int] | None, *, last: bool
) -> OutcomeResult:
    """The outcome, with the run's memories locked in id order, then the run (the store's
    order, memories.locks). A give that commits between the two adds memories: then all is
    let go and taken again with them (``_GivenMeanwhile`` rolls the transaction back), so
    that no memory is locked after the run; once the run is locked no give can add any (it
    waits, then finds the run finished). After GIVE_RACES such races in a row the newcomers
    are locked after the run."""
    with transaction.atomic():
        memory_ids = set(
            lock_memories(RunMemory.objects.filter(run_id=run.pk).values("memory_id")).values_list(
                "id", flat=True
            )
        )
        locked = (
            Run.objects.select_for_update(of=("self",), no_key=True)
            .select_related("project__policy")
            .get(pk=run.pk)
        )
        if locked.status != RunStatus.RUNNING:
            if locked.status == outcome:
                if used is not None and locked.used_memory_ids is None:
                    _note_used(locked, used)
                return OutcomeResult(run=locked, recorded=False, changes=ChangeResult())
            raise Conflict(
                f"Run {locked.external_id} already finished as {locked.status}; "
                f"it cannot also be {outcome}."
            )
        given = set(RunMemory.objects.filter(run=locked).values_list("memory_id", flat=True))
        if not given <= memory_ids and not last:
            raise _GivenMeanwhile
        locked.status = outcome
        locked.finished_at = now
        locked.save(update_fields=["status", "finished_at"])
        if used is not None:
            _note_used(locked, used)
        delta = OUTCOME_STEP if outcome == RunStatus.SUCCEEDED else -OUTCOME_STEP
        threshold = locked.project.policy.deactivate_below
        paused: list[int] = []

        def compute(memory: Memory) -> dict[str, Any]:
            if delta > 0 and memory.stale_at is not None:
                paused.append(memory.pk)  # flagged: a reviewer decides before it gains again
                return {}
            confidence = clamp_confidence(memory.confidence + delta)
            values: dict[str, Any] = {"confidence": confidence}
            if confidence < threshold:
                values["active"] = False
            return values

        changes = change_memories(
            memory_ids=given,
            compute=compute,
            action=EventAction.OUTCOME,
            actor=actor,
            reason=f"run {locked.external_id} {outcome}",
            run=locked,
            now=now,
        )
    return OutcomeResult(run=locked, recorded=True, changes=changes, paused_ids=paused)
