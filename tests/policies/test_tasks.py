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
from memories.models import Memory
from policies import tasks

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
    assert {entry["task"] for entry in schedule.values()} >= {"policies.expire_memories"}
    for entry in schedule.values():
        task = app.tasks[entry["task"]]
        assert task.acks_late
        assert task.time_limit
        assert task.soft_time_limit


@pytest.mark.django_db
def test_a_task_runs_its_policy(project, make_memory):
    memory = make_memory(project=project)
    Memory.objects.filter(pk=memory.pk).update(expires_at=timezone.now() - timedelta(hours=1))
    assert tasks.expire_memories.apply().get() == {"changed": 1, "batches": 1}
    memory.refresh_from_db()
    assert memory.active is False


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
    if not _broker_reachable():
        if os.environ.get("CI"):
            pytest.fail(f"No broker at {BROKER}: CI must run this test against a real one.")
        pytest.skip(f"No broker at {BROKER} (start Redis, or set TEST_CELERY_BROKER_URL).")
    memory = make_memory(project=project)
    Memory.objects.filter(pk=memory.pk).update(expires_at=timezone.now() - timedelta(hours=1))
    database = connection.settings_dict
    env = {
        **os.environ,
        "CELERY_BROKER_URL": BROKER,
        "DATABASE_URL": (
            f"postgres://{database['USER']}:{database['PASSWORD'] or ''}"
            f"@{database['HOST'] or '127.0.0.1'}:{database['PORT'] or 5432}/{database['NAME']}"
        ),
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo",
         "--without-heartbeat", "--without-mingle", "--without-gossip", "--loglevel", "WARNING",
         "--queues", f"test-{os.getpid()}"],
        cwd=ROOT, env=env,
    )  # fmt: skip
    try:
        with app.connection_for_write(BROKER) as broker:
            app.send_task(
                "policies.expire_memories", queue=f"test-{os.getpid()}", connection=broker
            )
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
