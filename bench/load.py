"""Load: 50 agents at once for 60 s against gunicorn with several workers, then a check that
no confidence update was lost.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/load.py

Each agent loops: start a run, ask for its context (the run is given memories), write what
it learned, report the run's outcome (which moves the confidence of every memory it was
given), and every fifth loop list the project's memories. Many agents are given the same
memories, so outcomes of concurrent runs update the same rows at once.

It prints throughput and p50/p95/p99 per endpoint and the count of 5xx (must be 0); then it
replays each memory's history: every outcome recorded in it starts from the confidence the
previous one left and moves it by exactly +0.1 (run succeeded) or -0.1 (failed), clamped, and
the last one leaves the confidence the memory has. Every run outcome a memory does not show
must be one that could not move it (already at the bound). Exits non-zero when any check
fails. Loopback only; the database ``memory_load`` is made afresh.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import random
import statistics
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("CACHE_URL", "redis://127.0.0.1:6379/14")
# All 50 agents share one key: the per-key limits (api.throttling) would answer most of the
# load with 429. This measures the server, not the limits.
os.environ.setdefault("API_THROTTLE_RATE", "1000000/min")
os.environ.setdefault("API_KEY_CONCURRENCY", "1000")
DATABASE = "memory_load"


def create_database() -> None:
    """``memory_load`` afresh, and DATABASE_URL naming it (before Django is set up)."""
    import psycopg
    from psycopg import sql

    base = os.environ["DATABASE_URL"].rsplit("/", 1)[0]
    with psycopg.connect(base + "/postgres", autocommit=True) as connection:
        connection.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DATABASE))
        )
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
    os.environ["DATABASE_URL"] = f"{base}/{DATABASE}"


if __name__ == "__main__":
    create_database()

from bench.context import PORT, django_setup, start_server, stop_server  # noqa: E402

AREAS = ["billing", "auth", "search", "importer", "reports", "api", "ui", "jobs"]
INTENTS = ["fix the failing tests", "add pagination", "speed up the import", "audit logging"]


def fresh_database() -> str:
    """Migrate ``memory_load``, seed a project with memories; the API key."""
    django_setup()
    from django.db import connection

    assert connection.settings_dict["NAME"] == DATABASE
    from django.core.management import call_command

    from memories import services
    from memories.actors import Actor

    call_command("migrate", verbosity=0)
    project = services.project_create(name="Load", slug="load", selection_limit=8)
    actor = Actor.system("load-seed")
    rng = random.Random(7)
    for number in range(400):
        area = rng.choice(AREAS)
        services.memory_create(
            project=project,
            type=rng.choice(["pattern", "warning", "learning", "context"]),
            content=f"In {area}, note {number}: {rng.choice(INTENTS)} needs care with step "
            f"{rng.randint(1, 50)}.",
            source="run",
            actor=actor,
            tags=[f"src/{area}/**"],
        )
    return services.api_key_create(project=project, name="load")[1]


def agent_loop(token: str, agent: int, seconds: float, out: list) -> None:
    rng = random.Random(agent)
    connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    base = "/api/projects/load"

    def call(name: str, method: str, path: str, body: dict | None = None) -> dict:
        nonlocal connection
        started = time.perf_counter()
        try:
            connection.request(method, path, json.dumps(body) if body else None, headers)
            response = connection.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException):
            # No answer at all: counted as a server error, on a new connection from here.
            out.append((name, 599, time.perf_counter() - started))
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
            return {}
        out.append((name, response.status, time.perf_counter() - started))
        return json.loads(payload) if payload and response.status < 300 else {}

    deadline = time.monotonic() + seconds
    loop = 0
    while time.monotonic() < deadline:
        loop += 1
        area = rng.choice(AREAS)
        scope = [f"src/{area}/{rng.choice(['models', 'views', 'tasks'])}.py"]
        run = call(
            "POST runs",
            "POST",
            f"{base}/runs",
            {"externalId": f"a{agent}-{loop}", "writeScope": scope},
        )
        if not run:
            continue
        call(
            "POST context",
            "POST",
            f"{base}/context",
            {
                "runId": run["id"],
                "writeScope": scope,
                "intent": rng.choice(INTENTS),
                "tokenBudget": 1500,
            },
        )
        call(
            "POST memories",
            "POST",
            f"{base}/memories",
            {
                "type": "learning",
                "content": f"Agent {agent} learned in loop {loop} that {area} needs step "
                f"{rng.randint(1, 99)}.",
                "tags": [f"src/{area}/**"],
                "sourceRunId": run["id"],
            },
        )
        outcome = "succeeded" if rng.random() < 0.6 else "failed"
        call("POST outcome", "POST", f"{base}/runs/{run['id']}/outcome", {"outcome": outcome})
        if loop % 5 == 0:
            call("GET memories", "GET", f"{base}/memories?limit=20")


def agent_process(token: str, first: int, count: int, seconds: float, queue) -> None:
    results: list = []
    threads = [
        threading.Thread(target=agent_loop, args=(token, first + n, seconds, results))
        for n in range(count)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    queue.put(results)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def report(results: list, seconds: float) -> int:
    by_endpoint: dict[str, list] = defaultdict(list)
    for name, status, took in results:
        by_endpoint[name].append((status, took))
    print("| endpoint | requests | req/s | p50 ms | p95 ms | p99 ms | 2xx | 4xx | 5xx |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    server_errors = 0
    for name in sorted(by_endpoint):
        rows = by_endpoint[name]
        took = [t * 1000 for _, t in rows]
        ok = sum(1 for s, _ in rows if 200 <= s < 300)
        client = sum(1 for s, _ in rows if 400 <= s < 500)
        server = sum(1 for s, _ in rows if s >= 500)
        server_errors += server
        print(
            f"| {name} | {len(rows)} | {len(rows) / seconds:.1f} | {statistics.median(took):.1f} "
            f"| {percentile(took, 0.95):.1f} | {percentile(took, 0.99):.1f} | {ok} | {client} "
            f"| {server} |"
        )
    print(
        f"\nall: {len(results)} requests, {len(results) / seconds:.1f} req/s, {server_errors} 5xx"
    )
    return server_errors + sum(1 for _, status, _ in results if not 200 <= status < 300)


def check_confidence() -> list[str]:
    """Replay every memory's recorded outcomes (see the module's docstring)."""
    from django.db import connection

    from memories.models import Memory, MemoryEvent, RunMemory
    from memories.services import OUTCOME_STEP, clamp_confidence

    problems: list[str] = []
    status = dict(
        RunMemory.objects.values_list("run_id", "run__status").distinct()  # type: ignore[arg-type]
    )
    chains: dict[int, list] = defaultdict(list)
    for event in MemoryEvent.objects.filter(action__in=["created", "outcome"]).order_by("id"):
        chains[event.memory_id].append(event)
    given = defaultdict(set)
    for memory_id, run_id in RunMemory.objects.values_list("memory_id", "run_id"):
        if status.get(run_id) in {"succeeded", "failed"}:
            given[memory_id].add(run_id)
    checked = outcomes = no_ops = 0
    for memory_id, confidence in Memory.objects.values_list("id", "confidence"):
        chain = chains[memory_id]
        value = chain[0].changes["confidence"][1]
        bounds_seen = {value}
        applied = set()
        for event in chain[1:]:
            before, after = event.changes["confidence"]
            step = OUTCOME_STEP if status[event.run_id] == "succeeded" else -OUTCOME_STEP
            if before != value or after != clamp_confidence(value + step):
                problems.append(
                    f"memory {memory_id}: event {event.id} {before}->{after} after {value}"
                )
            value = after
            bounds_seen.add(value)
            applied.add(event.run_id)
            outcomes += 1
        if value != confidence:
            problems.append(f"memory {memory_id}: history ends at {value}, stored {confidence}")
        for run_id in given[memory_id] - applied:
            bound = 1.0 if status[run_id] == "succeeded" else 0.0
            no_ops += 1
            if bound not in bounds_seen:
                problems.append(f"memory {memory_id}: run {run_id}'s outcome is missing")
        checked += 1
    connection.close()
    print(
        f"\nconfidence check: {checked} memories, {outcomes} outcome updates replayed, "
        f"{no_ops} outcomes at the bound (no change), {len(problems)} problems"
    )
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1) + 1)
    parser.add_argument("--processes", type=int, default=5, help="load generator processes")
    args = parser.parse_args()
    token = fresh_database()
    from django.db import connection

    connection.close()
    server = start_server(args.workers, cache_seconds=60)
    try:
        queue: multiprocessing.Queue = multiprocessing.Queue()
        per = args.agents // args.processes
        processes = [
            multiprocessing.Process(
                target=agent_process,
                args=(
                    token,
                    n * per,
                    per + (args.agents % args.processes if n == 0 else 0),
                    args.seconds,
                    queue,
                ),
            )
            for n in range(args.processes)
        ]
        started = time.monotonic()
        for process in processes:
            process.start()
        results = [row for _ in processes for row in queue.get()]
        for process in processes:
            process.join()
        elapsed = time.monotonic() - started
    finally:
        stop_server(server)
    print(f"{args.agents} agents, {args.seconds:.0f} s, gunicorn with {args.workers} workers\n")
    server_errors = report(results, elapsed)
    problems = check_confidence()
    for problem in problems[:20]:
        print("  ", problem)
    sys.exit(1 if server_errors or problems else 0)


if __name__ == "__main__":
    main()
