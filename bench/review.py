"""Server time of the review pages over a project of 10,000 memories.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memory_bench \\
        .venv/bin/python bench/seed.py 10000
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memory_bench \\
        .venv/bin/python bench/review.py

Each page is requested in-process through Django's test client, signed in as a reviewer,
so the time is the server's own (middleware, queries, templates), without a network.
Every memory the seed writes waits for review: the queue is as long as it gets.
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

from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.models import Permission  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from memories.models import Project  # noqa: E402

TARGET_MS = 200


def reviewer() -> object:
    user, _ = get_user_model().objects.get_or_create(username="bench-reviewer")
    user.user_permissions.add(
        Permission.objects.get(content_type__app_label="memories", codename="review_memory")
    )
    return user


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--slug", default="bench-10000", help="the project (bench/seed.py 10000)")
    parser.add_argument("--requests", type=int, default=30, help="requests per page")
    args = parser.parse_args()
    project = Project.objects.get(slug=args.slug)
    count = project.memories.count()
    client = Client()
    client.force_login(reviewer())
    base = f"/review/projects/{project.slug}"
    pages = [
        ("queue, newest first", f"{base}/queue/"),
        ("queue, least confident first", f"{base}/queue/?order=least-confident"),
        ("queue, page 100", f"{base}/queue/?page=100"),
        ("queue, every project", "/review/queue/"),
        ("memories", f"{base}/memories/"),
        ("memories, type + sort", f"{base}/memories/?type=warning&sort=confidence"),
        ("memories, text search", f"{base}/memories/?q=index+invoice&active=yes"),
        ("memories, tag", f"{base}/memories/?tag=database&sort=most-used"),
        ("memories, page 150", f"{base}/memories/?page=150"),
        ("dashboard", "/review/"),
    ]
    print(f"{count:,} memories in project {project.slug}; {args.requests} requests per page")
    print(f"{'page':<32} {'median ms':>10} {'p95 ms':>8} {'queries':>8}")
    for label, url in pages:
        client.get(url)  # warm: templates compiled, plans cached
        times = []
        for _ in range(args.requests):
            started = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, (url, response.status_code)
        with CaptureQueriesContext(connection) as queries:
            client.get(url)
        p95 = statistics.quantiles(times, n=20)[-1]
        flag = "" if statistics.median(times) < TARGET_MS else f"  (over {TARGET_MS} ms)"
        print(
            f"{label:<32} {statistics.median(times):>10.1f} {p95:>8.1f}"
            f" {len(queries.captured_queries):>8}{flag}"
        )


if __name__ == "__main__":
    main()
