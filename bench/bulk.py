"""Time a bulk edit over a whole project of 100,000 memories, end to end, then its undo.

The job runs in this process, batch by batch, as a worker runs it (the task only calls
``bulk_edit_run``): the snapshot, every batch (locked, changed through the services, one
history row per memory, items marked, progress counted), then the undo job likewise.
Run it on a COPY of a seeded store, never the seeded original (it writes):

    createdb -h 127.0.0.1 -U postgres -T memory_million memory_bulk
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memory_bulk .venv/bin/python manage.py migrate
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memory_bulk \\
        .venv/bin/python bench/bulk.py --project bench-100000 --action archive

Prints the time of the snapshot, of the job and of its undo, the rate, and the p50/p95
time of one batch (``--batch-size``, default BULK_EDIT_BATCH_SIZE).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402

from memories.actors import Actor  # noqa: E402
from memories.models import BulkEdit, BulkStatus, Memory, Project  # noqa: E402
from memories.services import bulk  # noqa: E402

PROTECTED = {"memory_million"}


def run(job: BulkEdit, batch_size: int, label: str) -> tuple[BulkEdit, float, list[float]]:
    times: list[float] = []
    started = time.perf_counter()
    while True:
        tick = time.perf_counter()
        job = bulk.bulk_edit_run(job_id=job.pk, batch_size=batch_size, batches=1)
        times.append(time.perf_counter() - tick)
        if len(times) % 20 == 0:
            print(f"  {label}: {job.done + job.failed:>7,} / {job.total:,}", flush=True)
        if job.finished:
            break
    return job, time.perf_counter() - started, times


def report(label: str, job: BulkEdit, seconds: float, times: list[float]) -> None:
    batches = sorted(times[:-1]) or [0.0]  # the last call only finds the job done
    p95 = batches[min(len(batches) - 1, int(len(batches) * 0.95))]
    print(
        f"{label:<8} {job.status:<7} {job.changed:>8,} changed {job.failed:>4} failed"
        f" {seconds:>7.1f} s  {job.changed / max(seconds, 1e-9):>7,.0f}/s"
        f"  batch p50 {statistics.median(batches) * 1000:.0f} ms p95 {p95 * 1000:.0f} ms",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", default="bench-100000", help="the project's slug")
    parser.add_argument("--action", default="archive", choices=["archive", "pin", "expire"])
    parser.add_argument("--batch-size", type=int, default=settings.BULK_EDIT_BATCH_SIZE)
    parser.add_argument(
        "--no-undo",
        action="store_true",
        help="time the job only (the undo of an archive compares every memory it makes"
        " active again for repeats and conflicts: minutes per 10,000)",
    )
    args = parser.parse_args()
    name = connection.settings_dict["NAME"]
    if name in PROTECTED:
        raise SystemExit(f"{name} is the seeded original: run this on a copy (see --help)")
    project = Project.objects.get(slug=args.project)
    user, _ = get_user_model().objects.get_or_create(
        username="bench-bulk", defaults={"is_superuser": True, "is_staff": True}
    )
    actor = Actor.for_user(user)
    memories = Memory.objects.filter(project=project)
    print(f"{name}: {Memory.objects.count():,} memories; project {project.slug}", flush=True)

    total_started = time.perf_counter()
    tick = time.perf_counter()
    job = bulk.bulk_edit_start(
        memories=memories, action=args.action, actor=actor, project=project, enqueue=False
    )
    snapshot = time.perf_counter() - tick
    print(f"snapshot {job.total:>8,} memories {snapshot:>7.2f} s", flush=True)
    job, seconds, times = run(job, args.batch_size, args.action)
    report(args.action, job, seconds, times)
    edit_total = time.perf_counter() - total_started
    if args.no_undo:
        print(f"end to end: {args.action} {edit_total:.1f} s (snapshot {snapshot:.2f} s)")
        return

    tick = time.perf_counter()
    undo = bulk.bulk_edit_undo(job=job, actor=actor, enqueue=False)
    undo_snapshot = time.perf_counter() - tick
    undo, undo_seconds, undo_times = run(undo, args.batch_size, "undo")
    report("undo", undo, undo_seconds, undo_times)
    print(
        f"end to end: {args.action} {edit_total:.1f} s (snapshot {snapshot:.2f} s),"
        f" undo {undo_snapshot + undo_seconds:.1f} s;"
        f" job {BulkEdit.objects.get(pk=job.pk).status}",
        flush=True,
    )
    if undo.status != BulkStatus.DONE or undo.changed != job.changed:
        raise SystemExit("the undo did not take every change back")


if __name__ == "__main__":
    main()
