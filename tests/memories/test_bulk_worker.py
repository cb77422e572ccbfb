"""A bulk edit run by a real Celery worker process through a real broker (Redis), as in
production: the task sent by name, its batches committed one by one, the job done."""

from __future__ import annotations

import os
import time

import pytest

from config.celery import app
from memories.models import BulkEdit, BulkStatus, Memory, MemoryEvent
from memories.services import bulk
from tests.policies.test_tasks import BROKER, _require_broker, _start_worker


def _send(job_id: int, queue: str) -> None:
    with app.connection_for_write(BROKER) as broker:
        app.send_task("memories.run_bulk_edit", args=[job_id], queue=queue, connection=broker)


def _wait_until_finished(job_id: int, seconds: float = 60) -> BulkEdit:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job = BulkEdit.objects.get(pk=job_id)
        if job.finished:
            return job
        time.sleep(0.2)
    return BulkEdit.objects.get(pk=job_id)


def test_the_task_is_registered_with_time_limits_and_late_acks():
    app.loader.import_default_modules()
    task = app.tasks["memories.run_bulk_edit"]
    assert task.acks_late
    assert task.soft_time_limit < task.time_limit


@pytest.mark.django_db(transaction=True)
def test_a_worker_runs_a_bulk_edit_and_its_undo(project, make_memory, reviewer_actor, settings):
    _require_broker()
    memories = [make_memory(project=project) for _ in range(5)]
    queue = f"test-bulk-{os.getpid()}"
    # The worker reads its batch size from the environment, as in production.
    os.environ["BULK_EDIT_BATCH_SIZE"] = "2"
    try:
        worker = _start_worker(queue)
    finally:
        del os.environ["BULK_EDIT_BATCH_SIZE"]
    try:
        job = bulk.bulk_edit_start(
            memories=Memory.objects.filter(project=project),
            action="pin",
            actor=reviewer_actor,
            enqueue=False,
        )
        _send(job.pk, queue)
        job = _wait_until_finished(job.pk)
        assert (job.status, job.changed) == (BulkStatus.DONE, len(memories))
        assert Memory.objects.filter(pinned=True).count() == len(memories)
        undo = bulk.bulk_edit_undo(job=job, actor=reviewer_actor, enqueue=False)
        _send(undo.pk, queue)
        undo = _wait_until_finished(undo.pk)
        assert (undo.status, undo.changed) == (BulkStatus.DONE, len(memories))
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assert not Memory.objects.filter(pinned=True).exists()
    assert BulkEdit.objects.get(pk=job.pk).status == BulkStatus.UNDONE
    assert MemoryEvent.objects.filter(reason=f"bulk edit #{job.pk}").count() == len(memories)
