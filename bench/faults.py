"""Faults: the database restarted under load, a Celery worker killed mid-batch, the broker down.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/faults.py

(a) A private PostgreSQL (initdb under a temporary folder, its own port) serves gunicorn
    while writers create memories, each with its own Idempotency-Key. It is stopped for a
    few seconds and started again. While it is down every answer must be a 503 in the error
    shape with Retry-After (never a 500, never a hang); after, writes succeed again; and
    every memory acknowledged with a 201 is in the database with its content.
(b) A Celery worker (prefork, one process, Redis broker, late acks) runs decay over 40,000
    memories; its pool process is killed with SIGKILL in the middle. The task must come back
    and finish, and the end state (each memory's confidence, active flag, and its one decay
    row in history) must equal that of a copy of the database on which decay ran once.
(c) A private Redis is the broker and the cache of a gunicorn; it is killed. Reads and
    writes (create, list, context, outcome) must still answer 2xx in under 2 s each;
    /readyz must say the broker is down (503) while /healthz says alive.

Loopback only; every process it starts is stopped; each part is bounded in time. Exits
non-zero when a check fails.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE_URL = os.environ["DATABASE_URL"].rsplit("/", 1)[0]
DATABASE = "memory_faults"
os.environ["DATABASE_URL"] = f"{BASE_URL}/{DATABASE}"
PG_BIN = Path("/usr/lib/postgresql/15/bin")
PRIVATE_PG_PORT = 5499
PRIVATE_REDIS_PORT = 6391
WEB_PORT = 8797
PYTHON = sys.executable
failures: list[str] = []


def check(condition: bool, message: str) -> None:
    print(("  ok   " if condition else "  FAIL ") + message)
    if not condition:
        failures.append(message)


def create_database(base_url: str, name: str, template: str | None = None) -> str:
    import psycopg
    from psycopg import sql

    with psycopg.connect(f"{base_url}/postgres", autocommit=True) as connection:
        connection.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template:
            statement += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
        connection.execute(statement)
    return f"{base_url}/{name}"


def manage(database_url: str, code: str) -> str:
    """Run Python with Django set up against ``database_url``; its printed output."""
    prelude = (
        "import django, os\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings')\n"
        "django.setup()\n"
    )
    result = subprocess.run(
        [PYTHON, "-c", prelude + code],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode:
        raise RuntimeError(result.stderr[-3000:])
    return result.stdout.strip()


SEED_PROJECT = """
from django.core.management import call_command
from memories import services
call_command("migrate", verbosity=0)
project = services.project_create(name="Faults", slug="faults")
print(services.api_key_create(project=project, name="faults")[1])
"""


def start_web(database_url: str, **env: str) -> subprocess.Popen:
    server = subprocess.Popen(
        [
            PYTHON,
            "-m",
            "gunicorn",
            "-c",
            "config/gunicorn.conf.py",
            "config.wsgi",
            "--workers",
            "2",
            "--bind",
            f"127.0.0.1:{WEB_PORT}",
        ],
        cwd=ROOT,
        env={
            **os.environ,
            "DATABASE_URL": database_url,
            "DEBUG": "false",
            "SECRET_KEY": "fault-tests-only-secret-key-0123456789abcdefghijklmnop",
            "ALLOWED_HOSTS": "127.0.0.1",
            "SECURE_SSL_REDIRECT": "false",
            "API_THROTTLE_RATE": "100000000/min",
            "DB_CONN_MAX_AGE": "600",
            "VAR_DIR": tempfile.mkdtemp(prefix="faults-var-"),
            "LOG_LEVEL": "ERROR",
            **env,
        },
        start_new_session=True,
    )
    for _ in range(150):
        try:
            status, _, _ = call("GET", "/healthz", timeout=1)
            if status == 200:
                return server
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("gunicorn did not start")


def stop(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(process.pid, signal.SIGKILL)


def call(
    method: str,
    path: str,
    body: dict | None = None,
    token: str = "",
    timeout: float = 10,
    **headers: str,
) -> tuple[int, dict, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", WEB_PORT, timeout=timeout)
    try:
        connection.request(
            method,
            path,
            json.dumps(body) if body is not None else None,
            {
                "Content-Type": "application/json",
                **({"Authorization": f"Bearer {token}"} if token else {}),
                **headers,
            },
        )
        response = connection.getresponse()
        raw = response.read()
        try:
            payload = json.loads(raw) if raw else {}
        except ValueError:
            payload = {"raw": raw[:200].decode(errors="replace")}
        return response.status, payload, dict(response.getheaders())
    finally:
        connection.close()


# --- (a) the database restarted under load ----------------------------------------------------


def as_postgres(*command: str) -> list[str]:
    """PostgreSQL refuses to run as root: run its tools as the postgres user then."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else list(command)


def database_restart() -> None:
    print("(a) PostgreSQL restarted under load")
    folder = Path(tempfile.mkdtemp(prefix="faults-pg-"))
    data = folder / "data"
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    subprocess.run(
        as_postgres(str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"),
        check=True,
        capture_output=True,
    )
    pg_ctl = [str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-w"]
    options = f"-p {PRIVATE_PG_PORT} -k {folder} -c listen_addresses=127.0.0.1"
    subprocess.run(as_postgres(*pg_ctl, "-o", options, "start"), check=True, capture_output=True)
    server = None
    try:
        url = create_database(f"postgres://postgres@127.0.0.1:{PRIVATE_PG_PORT}", DATABASE)
        token = manage(url, SEED_PROJECT).splitlines()[-1]
        server = start_web(url)
        acknowledged: dict[int, str] = {}
        answers: list[tuple[float, int, dict, dict]] = []
        down = threading.Event()
        stopping = threading.Event()

        def writer(number: int) -> None:
            sequence = 0
            while not stopping.is_set():
                sequence += 1
                content = f"Writer {number} noted fact {sequence} about the importer."
                started = time.monotonic()
                try:
                    status, payload, headers = call(
                        "POST",
                        "/api/projects/faults/memories",
                        {"type": "learning", "content": content},
                        token=token,
                        timeout=15,
                        **{"Idempotency-Key": str(uuid.uuid4())},
                    )
                except OSError as exc:
                    status, payload, headers = 0, {"exception": repr(exc)}, {}
                answers.append((time.monotonic() - started, status, payload, headers))
                if status == 201:
                    acknowledged[payload["id"]] = content
                time.sleep(0.02)

        writers = [threading.Thread(target=writer, args=(n,)) for n in range(5)]
        for thread in writers:
            thread.start()
        time.sleep(3)
        subprocess.run(as_postgres(*pg_ctl, "-m", "fast", "stop"), check=True, capture_output=True)
        down.set()
        stopped_at = len(answers)
        time.sleep(1)
        ready_status, ready, _ = call("GET", "/readyz")
        time.sleep(3)
        during = answers[stopped_at:]
        subprocess.run(
            as_postgres(*pg_ctl, "-o", options, "start"), check=True, capture_output=True
        )
        restarted_at = len(answers)
        time.sleep(4)
        stopping.set()
        for thread in writers:
            thread.join()
        after = answers[restarted_at:]
        statuses = Counter(status for _, status, _, _ in answers)
        print(f"  answers: {dict(statuses)}; {len(during)} while down, {len(after)} after")
        check(
            set(statuses) <= {201, 503},
            "every answer is a 201 or a 503 (no 500, no dropped connection)",
        )
        unavailable = [(p, h) for _, s, p, h in during if s == 503]
        check(bool(unavailable), "writes while the database is down are answered 503")
        check(
            all(
                p.get("error", {}).get("code") == "unavailable" and h.get("Retry-After") == "5"
                for p, h in unavailable
            ),
            "each 503 has the error shape (code unavailable) and Retry-After",
        )
        check(
            max(took for took, *_ in answers) < 10,
            f"no answer took 10 s or more (slowest {max(took for took, *_ in answers):.2f} s)",
        )
        check(
            ready_status == 503 and not ready["checks"]["database"]["ok"],
            "/readyz is 503 naming the database while it is down",
        )
        check(
            any(s == 201 for _, s, _, _ in after[len(after) // 2 :]),
            "writes succeed again after the restart",
        )
        stored = {
            int(line.split("\t")[0]): line.split("\t", 1)[1]
            for line in manage(
                url,
                "from memories.models import Memory\n"
                "for i, c in Memory.objects.values_list('id', 'content'): print(f'{i}\\t{c}')",
            ).splitlines()
        }
        lost = [i for i, content in acknowledged.items() if stored.get(i) != content]
        check(
            not lost,
            f"all {len(acknowledged)} acknowledged memories are stored as acknowledged "
            f"({len(lost)} lost)",
        )
    finally:
        if server:
            stop(server)
        subprocess.run(as_postgres(*pg_ctl, "-m", "immediate", "stop"), capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


# --- (b) a worker killed in the middle of a policy batch -------------------------------------

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


# --- (c) the broker down ---------------------------------------------------------------------


def broker_down() -> None:
    print("(c) the broker (and the cache) down")
    url = create_database(BASE_URL, DATABASE)
    token = manage(url, SEED_PROJECT).splitlines()[-1]
    folder = tempfile.mkdtemp(prefix="faults-redis-")
    redis_url = f"redis://127.0.0.1:{PRIVATE_REDIS_PORT}/0"
    redis = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(PRIVATE_REDIS_PORT),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            folder,
        ],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    server = None
    try:
        time.sleep(0.5)
        server = start_web(url, CELERY_BROKER_URL=redis_url, CACHE_URL=redis_url)
        check(call("GET", "/readyz")[0] == 200, "/readyz is 200 while the broker is up")
        stop(redis)
        time.sleep(0.5)
        base = "/api/projects/faults"
        steps = [
            (
                "create a memory",
                "POST",
                f"{base}/memories",
                {"type": "warning", "content": "Never deploy on Fridays.", "tags": ["deploy/**"]},
            ),
            ("list memories", "GET", f"{base}/memories", None),
            (
                "start a run",
                "POST",
                f"{base}/runs",
                {"externalId": "broker-down-1", "writeScope": ["deploy/run.sh"]},
            ),
        ]
        results = {}
        for name, method, path, body in steps:
            started = time.monotonic()
            status, payload, _ = call(method, path, body, token=token)
            results[name] = payload
            check(
                200 <= status < 300 and time.monotonic() - started < 2,
                f"{name}: {status} in {time.monotonic() - started:.2f} s",
            )
        run_id = results["start a run"].get("id")
        for name, path, body in [
            (
                "assemble context",
                f"{base}/context",
                {"runId": run_id, "writeScope": ["deploy/run.sh"], "tokenBudget": 500},
            ),
            ("report the outcome", f"{base}/runs/{run_id}/outcome", {"outcome": "succeeded"}),
        ]:
            started = time.monotonic()
            status, payload, _ = call("POST", path, body, token=token)
            check(
                200 <= status < 300 and time.monotonic() - started < 2,
                f"{name}: {status} in {time.monotonic() - started:.2f} s",
            )
        status, ready, _ = call("GET", "/readyz")
        check(
            status == 503
            and not ready["checks"]["broker"]["ok"]
            and ready["checks"]["database"]["ok"],
            "/readyz is 503 naming the broker",
        )
        check(call("GET", "/healthz")[0] == 200, "/healthz is 200")
    finally:
        if server:
            stop(server)
        if redis.poll() is None:
            stop(redis)
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parts = sys.argv[1:] or ["a", "b", "c"]
    for part, run in (("a", database_restart), ("b", worker_killed), ("c", broker_down)):
        if part in parts:
            started = time.monotonic()
            run()
            print(f"  ({time.monotonic() - started:.0f} s)\n")
    print("all checks passed" if not failures else f"{len(failures)} checks failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
