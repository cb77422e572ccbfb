"""What one whole walk of the ``find_conflicts`` job costs over a large store.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memory_bench \\
        .venv/bin/python bench/conflict_walk.py --size 100000 [--seconds 300]

Seeds ``bench-<size>`` (bench/seed.py) if it is not there, has the tables analysed (as
autovacuum would), then runs the job from the start of its walk, a batch at a time as the
beat job does: to its end (every active memory of the database, the seeded project's and
any other's), or for ``--seconds`` (the job's time budget). Prints the memories walked,
the time, the time per 10,000 memories and per batch, the open pairs before and after, and
what the comparisons considered (the job's report, as the review queue shows it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="memories in bench-<size>")
    parser.add_argument("--batch-size", type=int, default=200, help="the job's batch size")
    parser.add_argument("--seconds", type=float, default=None, help="stop after this long")
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection

    from bench.mcp import ensure_seeded
    from knowledge.models import MemoryPair, PairStatus
    from memories.models import Memory
    from memories.statistics import forget_common_words
    from policies.conflicts import JOB, find_conflicts
    from policies.models import JobState

    ensure_seeded(args.size)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    forget_common_words()
    active = Memory.objects.filter(active=True).count()
    open_before = MemoryPair.objects.filter(status=PairStatus.OPEN).count()
    JobState.objects.filter(name=JOB).delete()  # from the start of the walk
    started = time.perf_counter()
    result = find_conflicts(batch_size=args.batch_size, seconds=args.seconds)
    seconds = time.perf_counter() - started
    walked = active if result.finished else min(active, result.batches * args.batch_size)
    open_after = MemoryPair.objects.filter(status=PairStatus.OPEN).count()
    print(
        f"memories walked: {walked:,} of {active:,} active"
        f" (bench-{args.size} and the rest of the database)"
        + ("" if result.finished else f", stopped after {args.seconds:g} s")
    )
    print(
        f"walk: {seconds:.1f} s, {seconds / walked * 10_000:.1f} s per 10,000 memories,"
        f" {seconds / max(result.batches, 1) * 1000:.0f} ms per batch of {args.batch_size}"
        f" ({result.batches} batches)"
    )
    print(f"open pairs: {open_before:,} before, {open_after:,} after")
    for reason, count in sorted(result.report.items(), key=lambda item: -item[1]):
        print(f"  {reason}: {count:,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
