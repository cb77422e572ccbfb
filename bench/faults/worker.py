"""(b) A Celery worker killed in the middle of a policy batch (see bench.faults)."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time

from bench.faults.harness import (
    BASE_URL,
    DATABASE,
    PYTHON,
    ROOT,
    check,
    create_database,
    manage,
    stop,
)

SEED_DECAY = """
import sys
from django.core.management import call_command
from django.db import connection
call_command("migrate", verbosity=0)
sys.argv = ["seed"]
sys.path.insert(0, "bench")
import seed
seed.main(40000)
with connection.cursor() as cursor:
    cursor.execute(
        "UPDATE project_memories SET created_at = now() - interval '200 days',"
        " last_accessed_at = now() - interval '100 days', decayed_at = NULL, pinned = false,"
        " review_status = 'pending', confidence = 0.8, active = true, expires_at = NULL"
    )
    cursor.execute("DELETE FROM policies_jobstate")
    cursor.execute("SELECT count(*) FROM project_memories")
    print(cursor.fetchone()[0])
"""

END_STATE = """
from django.db.models import Count, Q
from memories.models import Memory
import hashlib
decays = Count("events", filter=Q(events__action="decayed"))
rows = sorted(
    Memory.objects.annotate(decays=decays).values_list("id", "confidence", "active", "decays")
)
once = sum(1 for row in rows if row[3] == 1)
more = sum(1 for row in rows if row[3] > 1)
print(hashlib.sha256(repr(rows).encode()).hexdigest(), once, more)
"""


def worker_killed() -> None:
    import psutil

    print("(b) a Celery worker killed in the middle of decay")
    url = create_database(BASE_URL, DATABASE)
    total = int(manage(url, SEED_DECAY).splitlines()[-1])
    reference = create_database(BASE_URL, f"{DATABASE}_once", template=DATABASE)
    manage(reference, "from policies import decay, runner\nrunner.record_run(decay.decay_memories)")
    broker = "redis://127.0.0.1:6379/12"
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "CELERY_BROKER_URL": broker,
        "POLICY_JOB_PARTS": "1",
        "LOG_LEVEL": "INFO",
    }
    subprocess.run(["redis-cli", "-n", "12", "FLUSHDB"], check=True, capture_output=True)
    log = open(tempfile.mktemp(prefix="faults-worker-", suffix=".log"), "w+")  # noqa: SIM115
    worker = subprocess.Popen(
        [
            PYTHON,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool",
            "prefork",
            "--concurrency",
            "1",
            "--loglevel",
            "INFO",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        time.sleep(4)
        subprocess.run(
            [
                PYTHON,
                "-c",
                "from config.celery import app; app.send_task('policies.decay_memories')",
            ],
            cwd=ROOT,
            env=env,
            check=True,
        )
        count_decays = (
            "from memories.models import MemoryEvent\n"
            "print(MemoryEvent.objects.filter(action='decayed').count())"
        )
        deadline = time.monotonic() + 120
        killed_at = None
        while time.monotonic() < deadline:
            done = int(manage(url, count_decays))
            if 0 < done < total:
                children = psutil.Process(worker.pid).children()
                for child in children:
                    child.kill()
                killed_at = done
                break
            time.sleep(0.2)
        check(
            killed_at is not None,
            f"the pool process was killed mid-job ({killed_at} of {total} memories decayed)",
        )
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and int(manage(url, count_decays)) < total:
            time.sleep(1)
        time.sleep(2)
        got = manage(url, END_STATE).split()
        want = manage(reference, END_STATE).split()
        check(
            got[1] == str(total) and got[2] == "0",
            f"every memory has exactly one decay row ({got[1]} with one, {got[2]} with more)",
        )
        check(got[0] == want[0], "the end state equals decay run once on a copy")
        log.seek(0)
        text = log.read()
        check(
            "WorkerLostError" in text or "Worker exited prematurely" in text,
            "the worker saw its process lost",
        )
        check(
            text.count("Task policies.decay_memories[") >= 2,
            "the task was delivered again and ran to the end",
        )
    finally:
        stop(worker)
        log.close()
