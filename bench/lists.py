"""Every list of the REST API beside one memory read by id, over HTTP under gunicorn.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memory_million \\
        .venv/bin/python bench/seed.py --no-embeddings 100000 1000000
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memory_million \\
        .venv/bin/python bench/lists.py --slug bench-100000

Each round asks every list once (each filter and each order the API offers, a page deep in
the walk, the global memories) and one memory by id, in turn, on one keep-alive connection:
machine noise falls on every row alike, and the ratio of a list's p50 to the read by id is
taken within the same run. Prints p50 and p95 of each, and that ratio.
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.server import call, manage, start_gunicorn

PORT = 8097
TARGET_RATIO = 2.0
TARGET_P95_MS = 25.0


def prepare(slug: str) -> tuple[str, int, list[int]]:
    """A fresh API key of the project, the project's id and some of its memory ids."""
    out = manage(
        "import json, time\n"
        "from memories import services\n"
        "from memories.models import Memory, Project\n"
        f"project = Project.objects.get(slug={slug!r})\n"
        "key = services.api_key_create(project=project, name=f'lists-{time.time_ns()}')[1]\n"
        "ids = list(Memory.objects.filter(project=project, active=True)"
        ".order_by('?').values_list('id', flat=True)[:500])\n"
        "print(json.dumps([key, project.pk, ids]))\n"
    )
    import json

    key, project_id, ids = json.loads(out.splitlines()[-1])
    return key, project_id, ids


def deep_cursor(port: int, token: str, path: str, pages: int) -> str:
    """The URL of page ``pages`` of a list, by walking its ``next`` links."""
    url = path
    for _ in range(pages - 1):
        status, body = call(port, "GET", url, token=token)
        assert status == 200, (url, status, body)
        assert isinstance(body, dict)
        following = body["next"]
        if not following:
            break
        url = following.split("://", 1)[-1].split("/", 1)[-1]
        url = "/" + url
    return url


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--slug", default="bench-100000", help="the project (bench/seed.py)")
    parser.add_argument("--rounds", type=int, default=60, help="requests per row")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    token, _, ids = prepare(args.slug)
    base = f"/api/projects/{args.slug}"
    server = start_gunicorn(
        port=PORT,
        workers=args.workers,
        API_THROTTLE_RATE="100000000/min",
        API_KEY_CONCURRENCY="64",
    )
    try:
        rows: list[tuple[str, str]] = [
            ("memories (default order)", f"{base}/memories?limit=50"),
            ("type=warning", f"{base}/memories?limit=50&type=warning"),
            ("tags=database", f"{base}/memories?limit=50&tags=database"),
            ("source=run", f"{base}/memories?limit=50&source=run"),
            ("reviewStatus=approved", f"{base}/memories?limit=50&reviewStatus=approved"),
            ("reviewStatus=pending", f"{base}/memories?limit=50&reviewStatus=pending"),
            ("q=cache", f"{base}/memories?limit=50&q=cache"),
            ("q=rare words", f"{base}/memories?limit=50&" + "q=" + quote("ledger outage")),
            ("about=ledger", f"{base}/memories?limit=50&about=ledger"),
            (
                "expiringBefore",
                f"{base}/memories?limit=50&expiringBefore=2100-01-01T00:00:00Z",
            ),
            ("active=false", f"{base}/memories?limit=50&active=false"),
        ]
        for order in ("createdAt", "updatedAt", "confidence", "expiresAt"):
            for sign in ("", "-"):
                rows.append(
                    (f"ordering={sign}{order}", f"{base}/memories?limit=50&ordering={sign}{order}")
                )
        rows += [
            ("page 40 (cursor)", deep_cursor(PORT, token, f"{base}/memories?limit=50", 40)),
            (
                "page 40, -confidence",
                deep_cursor(PORT, token, f"{base}/memories?limit=50&ordering=-confidence", 40),
            ),
            ("global memories", "/api/memories/global?limit=50"),
            ("global proposals", "/api/memories/global?limit=50&active=false"),
        ]
        by_id = "one memory by id"
        times: dict[str, list[float]] = {label: [] for label, _ in rows}
        times[by_id] = []
        connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
        for round_number in range(args.rounds + 2):
            timed = round_number >= 2  # two warm rounds: plans cached, pages in memory
            for label, path in [(by_id, ""), *rows]:
                if label == by_id:
                    path = f"{base}/memories/{ids[round_number % len(ids)]}"
                started = time.perf_counter()
                status, _ = call(PORT, "GET", path, token=token, connection=connection)
                elapsed = (time.perf_counter() - started) * 1000
                assert status == 200, (label, path, status)
                if timed:
                    times[label].append(elapsed)
        connection.close()
    finally:
        server.stop()
    one = statistics.median(times[by_id])
    print(
        f"project {args.slug}; {args.rounds} rounds, {args.workers} gunicorn workers;"
        f" PostgreSQL {os.environ.get('DATABASE_URL', '').rsplit('/', 1)[-1]}"
    )
    print(f"{'list':<28} {'p50 ms':>8} {'p95 ms':>8} {'p50/by id':>10}")
    failures = 0
    for label in [by_id, *(label for label, _ in rows)]:
        values = times[label]
        p50 = statistics.median(values)
        p95 = statistics.quantiles(values, n=20)[-1]
        ratio = p50 / one
        over = label != by_id and (ratio > TARGET_RATIO or p95 > TARGET_P95_MS)
        failures += over
        mark = "  (over target)" if over else ""
        print(f"{label:<28} {p50:>8.1f} {p95:>8.1f} {ratio:>9.2f}x{mark}")
    print(
        f"targets: p50 <= {TARGET_RATIO:.0f}x one memory by id, p95 <= {TARGET_P95_MS:.0f} ms;"
        f" {failures} list(s) over"
    )


if __name__ == "__main__":
    main()
