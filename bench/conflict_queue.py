"""How many pairs a real history opens for review, and what the walk costs.

    DATABASE_URL=... TEST_DATABASE_NAME=bench_queue \\
        .venv/bin/python bench/conflict_queue.py ../shared/retrieval/werkzeug [--show 20]

Each line of ``DIR/memories.jsonl`` (``{"content", "tags"}``, oldest first) is written as a
learning through the service (``memories.services.memory_create``, as the API writes it: its
embedding, entities and comparison with its candidates in its transaction), into a new
project of a database of its own (TEST_DATABASE_NAME, created or reused, never the
service's). Then the ``find_conflicts`` job runs until its walk is done. It prints the open
pairs by kind and class, what the comparisons considered, the write and job times, and with
``--show N`` the first N open pairs side by side, to read by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("history", help="a folder with memories.jsonl")
    parser.add_argument("--show", type=int, default=0, help="print the first N open pairs")
    parser.add_argument("--limit", type=int, default=0, help="write only the first N memories")
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection

    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=True)

    from knowledge.models import MemoryPair, PairStatus
    from memories import services
    from memories.actors import Actor
    from memories.models import Memory, Project
    from memories.statistics import forget_common_words
    from policies.conflicts import JOB, find_conflicts
    from policies.models import JobState

    lines = (Path(args.history) / "memories.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    if args.limit:
        rows = rows[: args.limit]
    slug = f"queue-{Path(args.history).resolve().name}"
    Project.objects.filter(slug=slug).delete()
    project = services.project_create(name=slug, slug=slug)
    actor = Actor.system("history")
    writes = []
    for row in rows:
        started = time.perf_counter()
        services.memory_create(
            project=project,
            type="learning",
            content=row["content"],
            tags=row.get("tags", []),
            source="run",
            actor=actor,
        )
        writes.append((time.perf_counter() - started) * 1000)
    at_write = MemoryPair.objects.filter(project=project, status=PairStatus.OPEN).count()
    # The walk reads the table's statistics (its common words), as after autovacuum's ANALYZE.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    forget_common_words()
    JobState.objects.filter(name=JOB).delete()
    started = time.perf_counter()
    result = find_conflicts(batch_size=200)
    job = time.perf_counter() - started
    pairs = MemoryPair.objects.filter(project=project, status=PairStatus.OPEN)
    kinds = Counter(
        (pair.kind, (pair.evidence or {}).get("class", "-"))
        for pair in pairs.only("kind", "evidence")
    )
    total = sum(kinds.values())
    print(f"{len(rows)} memories written: p50 {statistics.median(writes):.1f} ms each")
    print(f"open after the writes: {at_write}")
    print(f"find_conflicts: {job:.1f} s ({result.counts if hasattr(result, 'counts') else result})")
    print(f"open pairs: {total}")
    for (kind, klass), n in sorted(kinds.items(), key=lambda item: -item[1]):
        print(f"  {kind:9} {klass:12} {n}")
    memories = Memory.objects.filter(project=project).count()
    print(f"memories in the project: {memories}")
    for pair in pairs.select_related("first", "second").order_by("id")[: args.show]:
        print(f"\n#{pair.pk} {pair.kind} {pair.evidence.get('class', '')} {pair.similarity:.2f}")
        print(f"  A: {pair.first.content[:200]}")
        print(f"  B: {pair.second.content[:200]}")
        for differ in (pair.evidence or {}).get("differs", [])[:3]:
            print(f"  ~ {differ}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
