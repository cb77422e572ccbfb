"""Measure the lifecycle policy jobs over a store seeded by ``bench/seed.py --projects=100``.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memory_policies \\
        .venv/bin/python bench/seed.py --projects=100 1000000
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memory_policies \\
        .venv/bin/python bench/policies.py

The jobs change the store: seed again (or copy a template database) before another run.
With ``--template`` (a copy of the seeded store: ``createdb -T memory_policies
memory_policies_seeded``) each of ``--rounds`` rounds first replaces the ``DATABASE_URL``
database with a fresh copy of it, vacuumed and checkpointed, and the median of the rounds'
expiry + decay is reported, as this machine's timings vary from one minute to the next.
Each job runs as the beat would run it, in its bounded batches; consolidation compares each
memory with its project's memories that share one of its longest words, so it runs for
``--seconds`` and its throughput is reported. Eviction first gives every project a limit of
90 % of its active memories.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.db import connection  # noqa: E402
from django.db.migrations.executor import MigrationExecutor  # noqa: E402

from memories.models import Memory, MemoryPolicy  # noqa: E402
from policies import runner  # noqa: E402
from policies.compression import compress_memories  # noqa: E402
from policies.consolidation import consolidate_memories  # noqa: E402
from policies.decay import decay_memories  # noqa: E402
from policies.eviction import evict_memories  # noqa: E402
from policies.expiry import expire_memories  # noqa: E402
from policies.tiers import update_tiers  # noqa: E402


def active() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM project_memories WHERE active")
        return cursor.fetchone()[0]


def examined() -> int:
    """The memories consolidation's walk has examined: those active when it started up to
    where it stopped (the ones merged since included)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM project_memories WHERE id <= (SELECT cursor FROM"
            " policies_jobstate WHERE name = 'consolidate_memories')"
            " AND (active OR merged_into_id IS NOT NULL)"
        )
        return cursor.fetchone()[0]


def timed(label: str, job, **kwargs) -> tuple[runner.JobResult, float]:
    started = time.perf_counter()
    result = job(**kwargs)
    seconds = time.perf_counter() - started
    print(
        f"{label:<34} {result.total:>9,} changed {result.batches:>5} batches"
        f" {seconds:>8.1f} s{'' if result.finished else '  (stopped at its time budget)'}",
        flush=True,
    )
    return result, seconds


def in_parts(job, parts: int, **kwargs) -> runner.JobResult:
    """Run ``job`` as ``parts`` parts over ranges of ids at once, one thread (and database
    connection) each, as a worker with that many processes runs the parts the beat's task
    sends; the result adds theirs up."""
    results: list[runner.JobResult] = []

    def part(ids: runner.IdRange) -> None:
        try:
            results.append(job(ids=ids, **kwargs))
        finally:
            connection.close()

    threads = [threading.Thread(target=part, args=(ids,)) for ids in runner.id_parts(parts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    total = runner.JobResult(job.__name__)
    for result in results:
        total.batches += result.batches
        total.finished &= result.finished
        for project_id, count in result.changed.items():
            total.changed[project_id] = total.changed.get(project_id, 0) + count
    return total


def fresh_store(template: str) -> None:
    """Replace this database with a copy of ``template``, vacuumed and checkpointed: every
    round starts from the same store, with nothing left to flush from the last one."""
    name = connection.settings_dict["NAME"]
    if name == template:
        raise SystemExit("--template must be another database than DATABASE_URL's")
    quote = connection.ops.quote_name
    connection.close()
    with connection._nodb_cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {quote(name)}")
        cursor.execute(f"CREATE DATABASE {quote(name)} TEMPLATE {quote(template)}")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
        cursor.execute("CHECKPOINT")


def require_migrated() -> None:
    """Stop with what to do when the store (or the template it was copied from) was seeded
    before the last migrations."""
    executor = MigrationExecutor(connection)
    missing = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if missing:
        names = ", ".join(f"{m.app_label}.{m.name}" for m, _ in missing)
        raise SystemExit(
            f"{connection.settings_dict['NAME']} lacks migrations ({names}):"
            " run manage.py migrate on it (on the template itself with --template)"
        )


def expiry_and_decay(parts: int) -> float:
    _, expiry = timed(f"expiry, {parts} parts", partial(in_parts, expire_memories, parts))
    _, decay = timed(f"decay, {parts} parts", partial(in_parts, decay_memories, parts))
    print(f"{'expiry + decay':<34} {expiry + decay:>36.1f} s", flush=True)
    return expiry + decay


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0, help="consolidation's budget")
    parser.add_argument(
        "--only-expiry-and-decay", action="store_true", help="stop after the timed target"
    )
    parser.add_argument(
        "--parts", type=int, default=2, help="expiry and decay run as this many parts at once"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="expiry and decay this many times (--template)"
    )
    parser.add_argument(
        "--template", help="a copy of the seeded store: each round starts from a fresh copy"
    )
    args = parser.parse_args()
    if args.rounds > 1 and not args.template:
        parser.error("--rounds needs --template: expiry and decay change the store")
    seconds = []
    for _ in range(args.rounds):
        if args.template:
            fresh_store(args.template)
        require_migrated()
        total, projects = Memory.objects.count(), MemoryPolicy.objects.count()
        print(f"{total:,} memories, {active():,} active, in {projects} projects")
        seconds.append(expiry_and_decay(args.parts))
        print()
    print(
        f"{'expiry + decay, median':<34} {statistics.median(seconds):>36.1f} s"
        f" of {len(seconds)} round(s), {min(seconds):.1f} to {max(seconds):.1f} s"
        " (target: under 60 s)"
    )
    if args.only_expiry_and_decay:
        return
    print()
    # The bench store's memories are short: compress those over 60 tokens.
    MemoryPolicy.objects.update(compress_min_tokens=60)
    _, tiers = timed("tiers", update_tiers)
    print(f"{'':<34} {active() / tiers:>26,.0f} active memories/s")
    result, seconds = timed("compression", compress_memories)
    print(f"{'':<34} {result.total / seconds:>26,.0f} compressed memories/s")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memories_memorypolicy p SET max_items = (SELECT (count(*) * 0.9)::int"
            " FROM project_memories m WHERE m.project_id = p.project_id AND m.active)"
        )
    result, seconds = timed("eviction", evict_memories)
    print(f"{'':<34} {result.total / seconds:>26,.0f} evicted memories/s")
    result, seconds = timed(
        "consolidation", consolidate_memories, seconds=args.seconds, batch_size=500
    )
    print(
        f"{'':<34} {examined() / seconds:>26,.0f} examined memories/s,"
        f" {result.total / seconds:,.0f} merged/s"
    )


if __name__ == "__main__":
    main()
