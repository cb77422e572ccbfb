"""Contention: many agents of one project working on the same memories at once.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/contention.py

12 agents, each with its own API key of one project, 25 rounds each on one write scope:
start a run, ask for its context (the run is given the scope's memories, the same ones for
every agent), report the run's outcome (which moves the confidence of all it was given),
edit one of the memories given (new words: embedded and compared again) and flag another.
gunicorn with 4 workers, the default set-up (no Redis; ``--redis`` puts the caches in Redis).

It counts the answers >= 500 (or no answer) and the "deadlock detected" entries that
PostgreSQL logs for the benchmark's database during the run, printing the statements of
each deadlock. Target: 0 and 0. ``--repeat 3`` runs it three times in a row, each on a fresh
database. Loopback only; it stops by itself (every request has a timeout; the run is bounded
by its rounds) and stops the server it started. Exits non-zero when a target is missed.
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import statistics
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.server import PostgresLog, call, fresh_database, manage, start_gunicorn

DATABASE = "memory_contention"
SCOPE = ["src/billing/invoices.py"]

SEED = """
from memories import services
from memories.actors import Actor
from django.core.management import call_command
call_command("migrate", verbosity=0)
project = services.project_create(name="Contention", slug="contention", selection_limit=8)
actor = Actor.system("contention-seed")
steps = ["lock the row first", "batch the updates", "store times in UTC", "add an index",
         "retry with backoff", "check permissions", "log the request id", "pin the version"]
for number in range({memories}):
    services.memory_create(
        project=project, type="warning", source="human", actor=actor,
        content=f"Invoices rule {{number}}: {{steps[number % len(steps)]}} when changing "
                f"billing code (case {{number * 7 % 31}}).",
        tags=["src/billing/**"] if number % 3 else ["src/billing/invoices.py"],
    )
for agent in range({agents}):
    print(services.api_key_create(project=project, name=f"agent-{{agent}}")[1])
"""


def agent(port: int, token: str, number: int, rounds: int, out: list, seed: int) -> None:
    rng = random.Random(seed * 1000 + number)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    base = "/api/projects/contention"

    def send(name: str, method: str, path: str, body: dict) -> object:
        nonlocal connection
        started = time.perf_counter()
        try:
            status, payload = call(port, method, path, body, token, connection=connection)
        except (OSError, http.client.HTTPException):
            status, payload = 599, None  # no answer: counted with the server errors
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        took = time.perf_counter() - started
        out.append((name, status, took, payload if status >= 500 else None))
        return payload if 200 <= status < 300 else None

    for round_ in range(rounds):
        run = send(
            "POST runs",
            "POST",
            f"{base}/runs",
            {"externalId": f"agent-{number}-{seed}-{round_}", "writeScope": SCOPE},
        )
        if not isinstance(run, dict):
            continue
        context = send(
            "POST context",
            "POST",
            f"{base}/context",
            {"runId": run["id"], "writeScope": SCOPE, "intent": "fix invoices", "tokenBudget": 800},
        )
        given = [item["id"] for item in context["items"]] if isinstance(context, dict) else []
        outcome = "succeeded" if rng.random() < 0.6 else "failed"
        send("POST outcome", "POST", f"{base}/runs/{run['id']}/outcome", {"outcome": outcome})
        if not given:
            continue
        edited, flagged = rng.choice(given), rng.choice(given)
        send(
            "PATCH memory",
            "PATCH",
            f"{base}/memories/{edited}",
            {
                "content": f"Invoices rule {edited}: lock the row first when changing billing "
                f"code (seen by agent {number} in round {round_}).",
                "reason": "clarified",
            },
        )
        send(
            "POST flag",
            "POST",
            f"{base}/memories/{flagged}/flag",
            {"reason": f"agent {number} saw it fail in round {round_}"},
        )


def once(args: argparse.Namespace, seed: int) -> tuple[int, int]:
    fresh_database(DATABASE)
    env = {"CACHE_URL": args.redis} if args.redis else {}
    tokens = manage(SEED.format(memories=args.memories, agents=args.agents), **env).splitlines()
    log = PostgresLog(DATABASE)
    server = start_gunicorn(
        port=args.port,
        workers=args.workers,
        # The rate limit is not what is measured; the concurrency limit is the default.
        API_THROTTLE_RATE="1000000/min",
        **env,
    )
    results: list = []
    started = time.monotonic()
    try:
        threads = [
            threading.Thread(
                target=agent, args=(args.port, token, number, args.rounds, results, seed)
            )
            for number, token in enumerate(tokens)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        elapsed = time.monotonic() - started
        server.stop()
    time.sleep(0.5)  # the log's last lines
    deadlocks = log.deadlocks()
    by_endpoint: dict[str, Counter] = defaultdict(Counter)
    took: dict[str, list[float]] = defaultdict(list)
    for name, status, seconds, _ in results:
        by_endpoint[name][status] += 1
        took[name].append(seconds * 1000)
    errors = [(name, status, payload) for name, status, _, payload in results if status >= 500]
    print(
        f"\n{args.agents} agents x {args.rounds} rounds, gunicorn with {args.workers} workers"
        f" ({'Redis' if args.redis else 'no Redis'}): {len(results)} requests in"
        f" {elapsed:.1f} s ({len(results) / elapsed:.0f} req/s)"
    )
    for name in sorted(by_endpoint):
        times = sorted(took[name])
        print(
            f"  {name:13} {dict(sorted(by_endpoint[name].items()))}  p50 "
            f"{statistics.median(times):.0f} ms, p95 {times[int(0.95 * (len(times) - 1))]:.0f} ms"
        )
    print(f"  answers >= 500: {len(errors)}")
    for name, status, payload in errors[:10]:
        print(f"    {name} {status} {payload}")
    if log.readable:
        print(f"  'deadlock detected' in PostgreSQL's log ({log.path}): {len(deadlocks)}")
        for entry in deadlocks[:5]:
            print("    " + entry.replace("\n", "\n    "))
    else:
        print("  PostgreSQL's log is not readable here (PG_LOG names it): deadlocks not counted")
    return len(errors), len(deadlocks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--memories", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=1, help="runs in a row, each afresh")
    parser.add_argument("--port", type=int, default=int(os.environ.get("BENCH_PORT", "8300")))
    parser.add_argument(
        "--redis", nargs="?", const="redis://127.0.0.1:6379/5", default="", help="CACHE_URL"
    )
    args = parser.parse_args()
    totals = [once(args, seed) for seed in range(args.repeat)]
    runs = [f"{errors} answers >= 500, {deadlocks} deadlocks" for errors, deadlocks in totals]
    print("\nruns: " + "; ".join(runs))
    sys.exit(1 if any(errors or deadlocks for errors, deadlocks in totals) else 0)


if __name__ == "__main__":
    main()
