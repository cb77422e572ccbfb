"""The policy jobs on Celery: settings that Celery really reads, the beat schedule, and a
task sent by name through a real broker to a real worker process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from celery.app.defaults import DEFAULTS
from django.conf import settings
from django.db import connection
from django.utils import timezone

from config.celery import app
from memories.models import Memory, MemoryEvent
from policies import tasks
from tests.support import database_url, require

ROOT = Path(__file__).resolve().parents[2]
BROKER = os.environ.get("TEST_CELERY_BROKER_URL", "redis://127.0.0.1:6379/14")


def test_every_celery_setting_is_one_celery_knows():
    """A misspelt setting is silently ignored by Celery: every CELERY_* name must be real."""
    names = [name for name in dir(settings) if name.startswith("CELERY_")]
    assert "CELERY_TASK_REJECT_ON_WORKER_LOST" in names
    unknown = [name for name in names if name.removeprefix("CELERY_").lower() not in DEFAULTS]
    assert unknown == []


def test_the_traps_are_designed_against():
    assert app.conf.task_acks_late is True
    assert app.conf.task_reject_on_worker_lost is True
    assert app.conf.worker_prefetch_multiplier == 1


def test_the_beat_schedule_names_registered_tasks_with_time_limits():
    app.loader.import_default_modules()
    schedule = app.conf.beat_schedule
    assert {entry["task"] for entry in schedule.values()} == {
        "policies.expire_memories",
        "policies.decay_memories",
        "policies.compress_memories",
        "policies.consolidate_memories",
        "policies.evict_memories",
        "policies.clear_run_scratch",
        "policies.update_tiers",
        "policies.flush_memory_uses",
        "policies.find_conflicts",
        "policies.prune_conversations",
        "ops.fit_ranking",
    }
    for entry in schedule.values():
        task = app.tasks[entry["task"]]
        assert task.acks_late
        assert task.time_limit
        assert task.soft_time_limit


@pytest.mark.django_db
def test_migrate_puts_the_schedule_in_the_admin_and_a_pause_survives_the_next_sync():
    from django_celery_beat.models import PeriodicTask

    from policies.apps import sync_beat_schedule

    synced = {task.name: task for task in PeriodicTask.objects.all()}
    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        assert synced[name].task == entry["task"]
        assert synced[name].enabled
        assert synced[name].interval.every == entry["schedule"]
        assert synced[name].expire_seconds == entry["options"]["expire_seconds"]
    PeriodicTask.objects.filter(name="decay-memories").update(enabled=False)
    sync_beat_schedule()
    assert PeriodicTask.objects.get(name="decay-memories").enabled is False


@pytest.mark.django_db
def test_a_task_runs_its_policy(project, make_memory):
    memory = make_memory(project=project)
    Memory.objects.filter(pk=memory.pk).update(expires_at=timezone.now() - timedelta(hours=1))
    assert tasks.expire_memories.apply().get() == {"changed": 1, "batches": 1, "finished": True}
    memory.refresh_from_db()
    assert memory.active is False


def _start_worker(queue: str) -> subprocess.Popen:
    env = {**os.environ, "CELERY_BROKER_URL": BROKER, "DATABASE_URL": database_url()}
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo",
         "--without-heartbeat", "--without-mingle", "--without-gossip", "--loglevel", "WARNING",
         "--queues", queue],
        cwd=ROOT, env=env,
    )  # fmt: skip


def _require_broker() -> None:
    missing = f"No broker at {BROKER} (start Redis, or set TEST_CELERY_BROKER_URL)"
    require(_broker_reachable(), missing, strict=bool(os.environ.get("CI")))


def _send(name: str, queue: str) -> None:
    with app.connection_for_write(BROKER) as broker:
        app.send_task(name, queue=queue, connection=broker)


def _broker_reachable() -> bool:
    from kombu import Connection

    try:
        with Connection(BROKER, connect_timeout=2) as broker:
            broker.ensure_connection(max_retries=1)
        return True
    except Exception:
        return False


@pytest.mark.django_db(transaction=True)
def test_a_task_sent_by_name_through_a_real_broker_runs_in_a_worker(project, make_memory):
    _require_broker()
    memory = make_memory(project=project)
    Memory.objects.filter(pk=memory.pk).update(expires_at=timezone.now() - timedelta(hours=1))
    queue = f"test-{os.getpid()}"
    worker = _start_worker(queue)
    try:
        _send("policies.expire_memories", queue)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            memory.refresh_from_db()
            if not memory.active:
                break
            time.sleep(0.2)
        assert memory.active is False
    finally:
        worker.terminate()
        worker.wait(timeout=30)


# Holds a decay batch in the middle of its statement: its memories are already updated (in
# its transaction) when the first history row is written.
_SLEEP_IN_BATCH = """
CREATE FUNCTION test_sleep_in_batch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(120); RETURN NEW; END $$;
CREATE TRIGGER test_sleep_in_batch BEFORE INSERT ON memories_memoryevent
FOR EACH ROW WHEN (NEW.action = 'decayed') EXECUTE FUNCTION test_sleep_in_batch();
"""
_NO_SLEEP = """
DROP TRIGGER IF EXISTS test_sleep_in_batch ON memories_memoryevent;
DROP FUNCTION IF EXISTS test_sleep_in_batch();
"""


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_in_a_batch_leaves_no_half_of_it_and_the_next_run_finishes(
    project, make_memory
):
    _require_broker()
    memories = [make_memory(project=project) for _ in range(20)]
    Memory.objects.update(created_at=timezone.now() - timedelta(days=90))
    queue = f"test-kill-{os.getpid()}"
    worker = _start_worker(queue)
    try:
        with connection.cursor() as cursor:
            cursor.execute(_SLEEP_IN_BATCH)
        _send("policies.decay_memories", queue)
        deadline = time.monotonic() + 60
        sleeping = False
        while not sleeping and time.monotonic() < deadline:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE wait_event = 'PgSleep' AND datname = current_database()"
                )
                sleeping = cursor.fetchone()[0] > 0
            time.sleep(0.1)
        assert sleeping, "the worker never reached the middle of its batch"
        worker.kill()
        worker.wait(timeout=30)
        # The server notices the lost client and rolls its transaction back.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE wait_event = 'PgSleep' AND datname = current_database()"
                )
                if cursor.fetchone()[0] == 0:
                    break
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE wait_event = 'PgSleep' AND datname = current_database()"
                )
            time.sleep(0.2)
    finally:
        worker.kill()
        worker.wait(timeout=30)
        with connection.cursor() as cursor:
            cursor.execute(_NO_SLEEP)
    assert set(Memory.objects.values_list("confidence", flat=True)) == {0.5}
    assert not MemoryEvent.objects.filter(action="decayed").exists()
    assert tasks.decay_memories.apply().get()["changed"] == 20
    assert MemoryEvent.objects.filter(action="decayed").count() == len(memories)


@pytest.mark.django_db
def test_the_beat_task_sends_one_part_per_worker_process_and_each_records_its_run(
    project, make_memory, settings
):
    from policies.models import JobState

    settings.POLICY_JOB_PARTS = 2
    memories = [make_memory(project=project) for _ in range(6)]
    Memory.objects.update(created_at=timezone.now() - timedelta(days=90))
    app.conf.task_always_eager = True  # the parts run here, as they are sent
    try:
        assert tasks.decay_memories.apply().get() == {"parts": 2}
    finally:
        app.conf.task_always_eager = False
    assert MemoryEvent.objects.filter(action="decayed").count() == len(memories)
    runs = dict(JobState.objects.values_list("name", "last_changed"))
    assert set(runs) == {"decay_memories, part 1 of 2", "decay_memories, part 2 of 2"}
    assert sum(runs.values()) == len(memories)
    assert all(runs.values())
