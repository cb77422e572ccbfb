"""What reading entities adds to a memory write: memory creation through the service
(``memories.services.memory_create``: history, embedding, repeats and conflicts, entities,
all in its transaction) with entity reading on and off, on a seeded project.

    DATABASE_URL=... TEST_DATABASE_NAME=bench_entities \\
        .venv/bin/python bench/entities.py [--seed 2000] [--writes 300]

It works in a database of its own (TEST_DATABASE_NAME, created or reused, never the
service's). The project is seeded with memories that name code, files, modules, packages and
the project's marked words, as a team's would; then each write is timed with reading on and
off in turn (interleaved, so that drift counts against both), and the medians and their
difference are printed. "Off" replaces ``knowledge.entities.refresh`` with nothing for the
write: the rest of the write is the same.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

NAMES = ["RetryQueue", "OrderBook", "InvoiceWorker", "PaymentGateway", "retry_queue",
         "MAX_RETRIES", "billing.tasks", "orders.views", "send_invoice", "LedgerEntry"]  # fmt: skip
FILES = ["src/billing/queue.py", "src/billing/tasks.py", "src/orders/views.py",
         "src/ledger/models.py", "config/settings.toml"]  # fmt: skip
TERMS = ["Stripe", "Postgres", "Redis"]
VERBS = ["retries", "drops", "enqueues into", "reads", "locks", "writes to", "calls"]


def sentence(rng: random.Random, n: int) -> str:
    a, b = rng.sample(NAMES, 2)
    return (
        f"{a} in {rng.choice(FILES)} {rng.choice(VERBS)} {b} for {rng.choice(TERMS)}"
        f" events after {n % 97 + 2} attempts; pip install httpx before deploy {n}."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=2000, help="memories seeded first")
    parser.add_argument("--writes", type=int, default=300, help="timed writes per mode")
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection

    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=True)

    from knowledge import entities, receivers
    from knowledge.models import EntityMention, EntityTerm
    from memories import services
    from memories.actors import Actor
    from memories.models import Memory, Project

    actor = Actor.system("bench")
    rng = random.Random(7)
    project = Project.objects.filter(slug="bench-entities").first()
    if project is None:
        project = services.project_create(name="Bench entities", slug="bench-entities")
    for term in TERMS:
        EntityTerm.objects.get_or_create(project=project, name=term)
    have = Memory.objects.filter(project=project).count()
    for n in range(have, args.seed):
        services.memory_create(
            project=project, type="learning", content=sentence(rng, n), source="run", actor=actor
        )
    print(
        f"project: {Memory.objects.filter(project=project).count()} memories, "
        f"{EntityMention.objects.filter(entity__project=project).count()} mentions"
    )

    real = entities.refresh
    inside: list[float] = []

    def timed(memory_ids: Sequence[int]) -> int:
        started = time.perf_counter()
        try:
            return real(memory_ids)
        finally:
            inside.append((time.perf_counter() - started) * 1000)

    def skipped(memory_ids: Sequence[int]) -> int:
        return 0

    timings: dict[str, list[float]] = {"on": [], "off": []}
    for n in range(args.writes):
        for mode in ("on", "off") if n % 2 else ("off", "on"):
            receivers.entities.refresh = timed if mode == "on" else skipped
            content = sentence(rng, args.seed + 2 * n + (mode == "on"))
            started = time.perf_counter()
            services.memory_create(
                project=project, type="learning", content=content, source="run", actor=actor
            )
            timings[mode].append((time.perf_counter() - started) * 1000)
    receivers.entities.refresh = real

    on, off = statistics.median(timings["on"]), statistics.median(timings["off"])
    p90 = {m: statistics.quantiles(t, n=10)[-1] for m, t in timings.items()}
    print(f"{args.writes} writes each, memory_create in ms:")
    print(f"  entities on : p50 {on:.2f}  p90 {p90['on']:.2f}")
    print(f"  entities off: p50 {off:.2f}  p90 {p90['off']:.2f}")
    print(f"  difference of the medians: {on - off:.2f} ms")
    print(
        f"  entity reading itself, timed inside the write: p50 {statistics.median(inside):.2f}"
        f"  p90 {statistics.quantiles(inside, n=10)[-1]:.2f} (target: at most 2 ms at p50)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
