"""Server time of the review pages and of the admin's lists over a project of 100,000
memories in a table of 1.1 million (or of any project seeded by bench/seed.py).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memory_million \\
        .venv/bin/python bench/seed.py --no-embeddings 100000 1000000
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memory_million \\
        .venv/bin/python bench/review.py --slug bench-100000

Each page is requested in-process through Django's test client, so the time is the
server's own (middleware, queries, templates), without a network: the review pages signed
in as a reviewer, the admin's as a superuser (who sees every project's rows, the largest
lists there are). Every memory the seed writes waits for review: the queue is as long as it
gets. ``--pages admin`` (or ``review``) times only those.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, this folder comes first on the path, and its mcp.py would hide the MCP SDK
# that the URLs import.
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.models import Permission  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from memories.models import Project  # noqa: E402

# A page of one project, and the pages over every project (and the dashboard): p95.
TARGET_MS = 150
EVERY_PROJECT_TARGET_MS = 300
# The admin's targets: a list of one project's rows, and the lists over every project.
ADMIN_PROJECT_TARGET_MS = 150
ADMIN_ALL_TARGET_MS = 300


def reviewer() -> object:
    user, _ = get_user_model().objects.get_or_create(username="bench-reviewer")
    user.user_permissions.add(
        Permission.objects.get(content_type__app_label="memories", codename="review_memory")
    )
    return user


def administrator() -> object:
    user, _ = get_user_model().objects.get_or_create(
        username="bench-admin", defaults={"is_staff": True, "is_superuser": True}
    )
    return user


def deep(client: Client, url: str, pages: int) -> str:
    """The URL of page ``pages`` of a keyset-paged list, by following its next links."""
    separator = "&" if "?" in url else "?"
    after = ""
    for _ in range(pages - 1):
        html = client.get(url + (f"{separator}after={after}" if after else "")).text
        following = re.search(r'after=([^"&]+)" rel="next"', html)
        if following is None:
            break
        after = following.group(1)
    return url + (f"{separator}after={after}" if after else "")


def review_pages(project: Project, client: Client) -> list[tuple[str, str, int]]:
    base = f"/review/projects/{project.slug}"
    return [
        ("queue, newest first", f"{base}/queue/", TARGET_MS),
        ("queue, least confident first", f"{base}/queue/?order=least-confident", TARGET_MS),
        ("queue, page 100", deep(client, f"{base}/queue/", 100), TARGET_MS),
        ("queue, every project", "/review/queue/", EVERY_PROJECT_TARGET_MS),
        (
            "queue, every project, least c.",
            "/review/queue/?order=least-confident",
            EVERY_PROJECT_TARGET_MS,
        ),
        ("memories", f"{base}/memories/", TARGET_MS),
        ("memories, type + sort", f"{base}/memories/?type=warning&sort=confidence", TARGET_MS),
        ("memories, approved", f"{base}/memories/?review=approved", TARGET_MS),
        ("memories, source human", f"{base}/memories/?source=human", TARGET_MS),
        ("memories, text search", f"{base}/memories/?q=index+invoice&active=yes", TARGET_MS),
        ("memories, tag", f"{base}/memories/?tag=database&sort=recently-changed", TARGET_MS),
        ("memories, expiry", f"{base}/memories/?sort=expiry&active=yes", TARGET_MS),
        ("memories, stale", f"{base}/memories/?stale=yes&active=yes", TARGET_MS),
        ("memories, page 150", deep(client, f"{base}/memories/", 150), TARGET_MS),
        ("dashboard", "/review/", EVERY_PROJECT_TARGET_MS),
    ]


def admin_pages(project: Project) -> list[tuple[str, str, int]]:
    memories = "/admin/memories/memory/"
    events = "/admin/memories/memoryevent/"
    one = f"project__id__exact={project.pk}"
    return [
        ("admin memories, every project", memories, ADMIN_ALL_TARGET_MS),
        ("admin memories, one project", f"{memories}?{one}", ADMIN_PROJECT_TARGET_MS),
        ("admin memories, search cache", f"{memories}?q=cache", ADMIN_ALL_TARGET_MS),
        ("admin memories, page 500", f"{memories}?p=500", ADMIN_ALL_TARGET_MS),
        ("admin memories, project search", f"{memories}?{one}&q=cache", ADMIN_PROJECT_TARGET_MS),
        ("admin memories, project p. 500", f"{memories}?{one}&p=500", ADMIN_PROJECT_TARGET_MS),
        ("admin events, one project", f"{events}?{one}", ADMIN_PROJECT_TARGET_MS),
    ]


def time_pages(client: Client, pages: list[tuple[str, str, int]], requests: int) -> None:
    for label, url, target_ms in pages:
        client.get(url)  # warm: templates compiled, plans cached
        times = []
        for _ in range(requests):
            started = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, (url, response.status_code)
        with CaptureQueriesContext(connection) as queries:
            client.get(url)
        p95 = statistics.quantiles(times, n=20)[-1]
        flag = "" if p95 <= target_ms else f"  (p95 over {target_ms} ms)"
        print(
            f"{label:<32} {statistics.median(times):>10.1f} {p95:>8.1f}"
            f" {len(queries.captured_queries):>8}{flag}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--slug", default="bench-10000", help="the project (bench/seed.py 10000)")
    parser.add_argument("--requests", type=int, default=30, help="requests per page")
    parser.add_argument("--pages", choices=["all", "review", "admin"], default="all")
    args = parser.parse_args()
    project = Project.objects.get(slug=args.slug)
    count = project.memories.count()
    print(f"{count:,} memories in project {project.slug}; {args.requests} requests per page")
    print(f"{'page':<32} {'median ms':>10} {'p95 ms':>8} {'queries':>8}")
    if args.pages in {"all", "review"}:
        client = Client()
        client.force_login(reviewer())
        time_pages(client, review_pages(project, client), args.requests)
    if args.pages in {"all", "admin"}:
        client = Client()
        client.force_login(administrator())
        time_pages(client, admin_pages(project), args.requests)


if __name__ == "__main__":
    main()
