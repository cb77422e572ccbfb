"""Soak: hours of ordinary use compressed into minutes, watched for what creeps.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/soak.py
    ... bench/soak.py --minutes 3 --redis      # shorter, caches and slots in Redis

6 agents on one API key (API_KEY_CONCURRENCY=64, far above what they send at once),
gunicorn with 4 workers, for ``--minutes`` (10 by default). Each agent loops: start a run,
ask for its context, write what it learned, edit a memory it was given, report the outcome,
and every fifth loop list the project's memories. Every minute the lifecycle jobs run
(``manage.py run_job --all``: expiry, decay, tiers, compression, consolidation, eviction
over the project's limit, scratch, conflicts, uses), on memories seeded old enough for them
to act; on a server with autovacuum off, after a VACUUM (ANALYZE), as autovacuum would
have run. Without Redis (the default set-up: leases in PostgreSQL, file caches) or with it.

Per minute: requests, answers by status, p50/p95 latency, the workers' memory. Checks: no
answer >= 500, no 429 (the agents never reach the limit), the last minute's p50 within 1.5x
of the first's, the workers' memory grown less than 20 % from the end of the first minute
to the end, and no "deadlock detected" in PostgreSQL's log. Loopback only; it stops by
itself after its minutes (every request has a timeout) and stops what it started. Exits
non-zero when a check fails.
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.server import (  # noqa: E402
    PostgresLog,
    Server,
    call,
    fresh_database,
    manage,
    start_gunicorn,
)

DATABASE = "memory_soak"
AREAS = ["billing", "auth", "search", "importer", "reports", "api", "ui", "jobs"]
INTENTS = ["fix the failing tests", "add pagination", "speed up the import", "audit logging"]

SEED = """
import random
from datetime import timedelta
from django.core.management import call_command
from django.utils import timezone
from memories import services
from memories.actors import Actor
from memories.models import Memory, MemoryPolicy
call_command("migrate", verbosity=0)
project = services.project_create(name="Soak", slug="soak", selection_limit=8)
MemoryPolicy.objects.filter(project=project).update(max_items={max_items})
actor = Actor.system("soak-seed")
rng = random.Random(7)
areas = {areas!r}
for number in range({memories}):
    area = rng.choice(areas)
    services.memory_create(
        project=project, type=rng.choice(["pattern", "warning", "learning", "context"]),
        content=f"In {{area}}, note {{number}}: " + " ".join(
            rng.choice(["lock", "retry", "index", "batch", "cache", "check", "log", "pin"])
            for _ in range(rng.randint(8, 60))),
        source="run", actor=actor, tags=[f"src/{{area}}/**"],
    )
# Old, so that decay, tiers, compression and expiry have work every minute.
old = timezone.now() - timedelta(days=200)
Memory.objects.filter(project=project).update(created_at=old, last_accessed_at=old)
Memory.objects.filter(project=project, id__in=Memory.objects.filter(project=project)
    .order_by("id").values("id")[:{memories} // 10]).update(expires_at=timezone.now())
print(services.api_key_create(project=project, name="soak")[1])
"""


def agent(port: int, token: str, number: int, deadline: float, out: list) -> None:
    rng = random.Random(number)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    base = "/api/projects/soak"

    def send(name: str, method: str, path: str, body: dict | None = None) -> object:
        nonlocal connection
        started = time.monotonic()
        try:
            status, payload = call(port, method, path, body, token, connection=connection)
        except (OSError, http.client.HTTPException):
            status, payload = 599, None
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        out.append((started, name, status, time.monotonic() - started))
        return payload if 200 <= status < 300 else None

    loop = 0
    while time.monotonic() < deadline:
        loop += 1
        area = rng.choice(AREAS)
        scope = [f"src/{area}/{rng.choice(['models', 'views', 'tasks'])}.py"]
        run = send("POST runs", "POST", f"{base}/runs", {"externalId": f"a{number}-{loop}",
                                                          "writeScope": scope})  # fmt: skip
        if not isinstance(run, dict):
            continue
        context = send(
            "POST context",
            "POST",
            f"{base}/context",
            {"runId": run["id"], "writeScope": scope, "intent": rng.choice(INTENTS),
             "tokenBudget": 1500},
        )  # fmt: skip
        send(
            "POST memories",
            "POST",
            f"{base}/memories",
            {
                "type": "learning",
                "content": f"Agent {number} learned in loop {loop} that {area} needs step "
                f"{rng.randint(1, 99)}.",
                "tags": [f"src/{area}/**"],
                "sourceRunId": run["id"],
            },
        )
        given = [item["id"] for item in context["items"]] if isinstance(context, dict) else []
        if given:
            send(
                "PATCH memory",
                "PATCH",
                f"{base}/memories/{rng.choice(given)}",
                {"relevanceScore": round(rng.random(), 2), "reason": "soak"},
            )
        outcome = "succeeded" if rng.random() < 0.6 else "failed"
        send("POST outcome", "POST", f"{base}/runs/{run['id']}/outcome", {"outcome": outcome})
        if loop % 5 == 0:
            send("GET memories", "GET", f"{base}/memories?limit=20")


class Jobs(threading.Thread):
    """The lifecycle jobs every minute, as the beat would run them (a process of their own)."""

    def __init__(self, env: dict[str, str], deadline: float) -> None:
        super().__init__(daemon=True)
        self.env, self.deadline, self.runs, self.failures = env, deadline, 0, 0
        self.seconds: list[float] = []  # each run's duration
        self.vacuum = False

    def run(self) -> None:
        import psycopg

        with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as connection:
            # A server with autovacuum off (a CI machine's set-up, not PostgreSQL's default)
            # gets what autovacuum would do each minute, else its statistics and dead rows
            # are those of the start: a creep of the set-up, not of the service.
            self.vacuum = connection.execute("SHOW autovacuum").fetchone() == ("off",)
        while time.monotonic() + 60 < self.deadline:
            started = time.monotonic()
            if self.vacuum:
                with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as connection:
                    connection.execute("VACUUM (ANALYZE)")
            done = subprocess.run(
                [sys.executable, "manage.py", "run_job", "--all"],
                cwd=ROOT,
                env={**os.environ, **self.env, "LOG_LEVEL": "WARNING"},
                capture_output=True,
                text=True,
                timeout=300,
            )
            self.runs += 1
            self.seconds.append(time.monotonic() - started)
            if done.returncode:
                self.failures += 1
                print(done.stderr[-2000:], file=sys.stderr)
            time.sleep(max(0.0, 60 - (time.monotonic() - started)))


def watch_memory(server: Server, deadline: float, samples: list) -> None:
    while time.monotonic() < deadline:
        samples.append((time.monotonic(), server.worker_memory()))
        time.sleep(5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--agents", type=int, default=6)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--port", type=int, default=int(os.environ.get("BENCH_PORT", "8301")))
    parser.add_argument(
        "--redis", nargs="?", const="redis://127.0.0.1:6379/6", default="", help="CACHE_URL"
    )
    args = parser.parse_args()
    fresh_database(DATABASE)
    env = {"CACHE_URL": args.redis} if args.redis else {}
    if args.redis:
        subprocess.run(["redis-cli", "-u", args.redis, "FLUSHDB"], check=True, capture_output=True)
    seed = SEED.format(max_items=args.memories + 100, areas=AREAS, memories=args.memories)
    token = manage(seed, **env).splitlines()[-1]
    log = PostgresLog(DATABASE)
    limit = {"API_KEY_CONCURRENCY": "64", "API_THROTTLE_RATE": "1000000/min"}
    server = start_gunicorn(port=args.port, workers=args.workers, **limit, **env)
    results: list = []
    memory: list = []
    started = time.monotonic()
    deadline = started + args.minutes * 60
    jobs = Jobs(env, deadline)
    try:
        threads = [
            threading.Thread(target=agent, args=(args.port, token, n, deadline, results))
            for n in range(args.agents)
        ]
        threads.append(threading.Thread(target=watch_memory, args=(server, deadline, memory)))
        jobs.start()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        jobs.join(timeout=300)
    finally:
        server.stop()
    time.sleep(0.5)
    sys.exit(report(args, results, memory, jobs, log, started))


def report(args, results: list, memory: list, jobs: Jobs, log: PostgresLog, started: float) -> int:
    minutes = max(1, round(args.minutes))
    print(
        f"\nsoak: {args.agents} agents on one key, gunicorn with {args.workers} workers, "
        f"{args.minutes:g} min, {'Redis' if args.redis else 'no Redis'}; the lifecycle jobs "
        f"ran {jobs.runs} times ({jobs.failures} failed)\n"
    )
    print("| minute | requests | 2xx | 429 | >= 500 | p50 ms | p95 ms | workers' memory MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    p50s = []
    for minute in range(minutes):
        rows = [r for r in results if minute <= (r[0] - started) / 60 < minute + 1]
        took = sorted(r[3] * 1000 for r in rows) or [0.0]
        statuses = Counter(r[2] for r in rows)
        at = [m for t, m in memory if (t - started) / 60 < minute + 1]
        p50s.append(statistics.median(took))
        print(
            f"| {minute + 1} | {len(rows)} | {sum(n for s, n in statuses.items() if s < 300)} "
            f"| {statuses[429]} | {sum(n for s, n in statuses.items() if s >= 500)} "
            f"| {p50s[-1]:.1f} | {took[int(0.95 * (len(took) - 1))]:.1f} "
            f"| {at[-1] / 2**20 if at else 0:.0f} |"
        )
    print("\n| request | first minute p50 ms | last minute p50 ms | ratio |")
    print("|---|---:|---:|---:|")
    for name in sorted({r[1] for r in results}):
        first, last = (
            [
                r[3] * 1000
                for r in results
                if r[1] == name and minute <= (r[0] - started) / 60 < minute + 1
            ]
            for minute in (0, minutes - 1)
        )
        if first and last:
            a, b = statistics.median(first), statistics.median(last)
            print(f"| {name} | {a:.1f} | {b:.1f} | {b / a:.2f} |")
    print(f"\nlifecycle job runs, seconds each: {', '.join(f'{s:.1f}' for s in jobs.seconds)}")
    if jobs.vacuum:
        print("(autovacuum is off on this server: each minute began with VACUUM (ANALYZE))")
    statuses = Counter(r[2] for r in results)
    errors = sum(n for s, n in statuses.items() if s >= 500)
    first_memory = next((m for t, m in memory if t - started >= 60), memory[0][1])
    growth = memory[-1][1] / first_memory - 1
    deadlocks = len(log.deadlocks())
    checks = [
        (errors == 0, f"answers >= 500: {errors}"),
        (statuses[429] == 0, f"answers 429 below the limit: {statuses[429]}"),
        (p50s[-1] <= 1.5 * p50s[0], f"last minute's p50 / first's: {p50s[-1] / p50s[0]:.2f}"),
        (growth < 0.2, f"workers' memory growth after the first minute: {growth:+.1%}"),
        (deadlocks == 0, f"'deadlock detected' in PostgreSQL's log: {deadlocks}"),
        (jobs.failures == 0, f"lifecycle job runs that failed: {jobs.failures}"),
    ]
    print(f"\n{len(results)} requests, {dict(sorted(statuses.items()))}")
    for ok, message in checks:
        print(("  ok    " if ok else "  FAIL  ") + message)
    return 0 if all(ok for ok, _ in checks) else 1


if __name__ == "__main__":
    main()
