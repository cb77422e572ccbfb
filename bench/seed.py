"""Seed a benchmark project of N memories (realistic lengths, tags and types) with COPY.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memory_bench \\
        .venv/bin/python bench/seed.py 10000 100000

or, for the policy jobs, one million memories spread over 100 projects:

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memory_policies \\
        .venv/bin/python bench/seed.py --projects=100 1000000

Every memory is then embedded with the configured model (``--no-embeddings`` skips it), and
the rate and the sizes of the vectors and of the memories table are printed.

All projects live in the one memories table, as in production, beside 2,000 global memories
that every project sees. Re-running with the same size replaces that project (and the
global memories).
"""

from __future__ import annotations

import os
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.db import connection  # noqa: E402

from knowledge import embeddings  # noqa: E402
from memories import services  # noqa: E402
from memories.models import Project  # noqa: E402
from memories.tags import tag_keys, tag_patterns  # noqa: E402
from memories.text import content_hash, summarize  # noqa: E402
from memories.tokens import get_encoding  # noqa: E402

AREAS = ["core", "api", "auth", "billing", "search", "importers", "invoices", "ledger", "ops", "ui"]
FILES = ["models", "views", "services", "tasks", "serializers", "admin", "utils", "tests"]
KEYWORDS = ["database", "performance", "security", "testing", "migrations", "celery",
            "deploy", "flaky", "datetime", "privacy", "caching", "logging"]  # fmt: skip
VERBS = ["Always", "Never", "Prefer to", "Remember to", "Avoid having to", "Make sure to"]
ACTIONS = ["run the full test suite", "batch large updates", "lock the row first",
           "add an index", "store times in UTC", "retry with backoff", "check permissions",
           "use select_related", "keep the view thin", "write a migration", "log the request id",
           "invalidate the cache", "pin the dependency", "validate the input"]  # fmt: skip
REASONS = ["because the events table is huge", "or production pages at night",
           "since the last outage came from this", "as the reviewers asked",
           "to keep the p95 under budget", "when the importer sees Excel files"]  # fmt: skip
INTENTS = ["add an index to speed up the invoice list", "fix the flaky test in the checkout",
           "write a migration for the ledger", "retry the importer with backoff",
           "store the times in UTC", "check permissions before the export",
           "invalidate the cache after an update", "batch the nightly updates"]  # fmt: skip


def areas(size: int) -> list[str]:
    """Code areas of a project of ``size`` memories: about 500 memories per area, as in a
    code base that grows with its memory (10 areas at 10,000, 2,000 at 1,000,000)."""
    count = max(len(AREAS), size // 500)
    return [f"{AREAS[i % len(AREAS)]}{i // len(AREAS) or ''}" for i in range(count)]


def sentence(rng: random.Random, area: str) -> str:
    return f"{rng.choice(VERBS)} {rng.choice(ACTIONS)} in src/{area}/ {rng.choice(REASONS)}."


def memory_row(
    rng: random.Random,
    project_id: int | None,
    now: datetime,
    encoding,
    names: list[str],
    extra_tags: tuple[str, ...] = (),
) -> tuple:
    area = rng.choice(names)
    content = " ".join(sentence(rng, area) for _ in range(rng.randint(1, 5)))
    tags = rng.sample(
        [f"src/{area}/**", f"src/{area}/{rng.choice(FILES)}.py", rng.choice(KEYWORDS), area], 2
    ) + list(extra_tags)
    kind = rng.choice(["pattern", "warning", "learning", "context"])
    source = rng.choice(["human", "run", "run", "learning"])
    confidence = round(rng.uniform(0.1, 1.0), 3)
    created = now - timedelta(days=rng.uniform(0, 365))
    accesses = rng.choice([0, 0, rng.randint(1, 5), rng.randint(1, 50)])
    last_access = created + (now - created) * rng.random() if accesses else None
    expires = None if kind == "pattern" else created + timedelta(days=rng.randint(30, 400))
    return (
        project_id, "project" if project_id else "global", kind, content, summarize(content),
        source, tags, tag_patterns(tags), tag_keys(tags),
        round(rng.uniform(0.2, 1.0), 3), confidence, rng.random() > 0.1, expires, "pending",
        False, rng.choice(["hot", "warm", "cold"]), len(encoding.encode(content)),
        accesses, last_access, content_hash(content), created, created,
    )  # fmt: skip


REBUILD_FROM = 100_000
COLUMNS = (
    "project_id, scope, type, content, summary, source, tags, tag_patterns, tag_keys,"
    " relevance_score, confidence, active, expires_at, review_status, pinned, tier, token_count,"
    " access_count, last_accessed_at, content_hash, created_at, updated_at"
)
# Global memories (shared by every project) of the benchmark carry this tag, so that seeding
# again replaces them and nothing else.
GLOBAL_TAG = "bench-global"
GLOBAL_COUNT = 2000


def seed_global(count: int = GLOBAL_COUNT) -> None:
    """Global memories about the same code areas, as every project sees them."""
    rng = random.Random(count)
    encoding = get_encoding("o200k_base")
    now = datetime.now(UTC)
    with connection.cursor() as cursor:
        old = "SELECT id FROM project_memories WHERE project_id IS NULL AND %s = ANY(tags)"
        # Their vectors first (seeding again after embedding them).
        cursor.execute(
            f"DELETE FROM memories_memoryembedding WHERE memory_id IN ({old})", [GLOBAL_TAG]
        )
        cursor.execute(f"DELETE FROM project_memories WHERE id IN ({old})", [GLOBAL_TAG])
        with cursor.connection.cursor().copy(
            f"COPY project_memories ({COLUMNS}) FROM STDIN"
        ) as copy:
            for _ in range(count):
                copy.write_row(memory_row(rng, None, now, encoding, AREAS, (GLOBAL_TAG,)))
        cursor.execute("ANALYZE project_memories")
    print(f"seeded {count} global memories")


def main(size: int, projects: int = 1) -> None:
    """Seed a project of ``size`` memories, or ``projects`` projects sharing ``size``."""
    rng = random.Random(size * projects)
    each = size // projects
    slugs = (
        [f"bench-{size}"]
        if projects == 1
        else [f"bench-{i}-of-{projects}" for i in range(projects)]
    )
    Project.objects.filter(slug__in=slugs).delete()
    project_ids = [
        services.project_create(name=f"Benchmark {slug.removeprefix('bench-')}", slug=slug).pk
        for slug in slugs
    ]
    encoding = get_encoding("o200k_base")
    now = datetime.now(UTC)
    started = time.perf_counter()
    names = areas(each)
    with connection.cursor() as cursor:
        # Loading a large project is faster with the GIN indexes built once afterwards.
        rebuilt = size >= REBUILD_FROM
        if rebuilt:
            cursor.execute(
                "SELECT indexname, indexdef FROM pg_indexes"
                " WHERE tablename = 'project_memories' AND indexdef LIKE '%USING gin%'"
            )
            gin_indexes = cursor.fetchall()
            for name, _ in gin_indexes:
                cursor.execute(f'DROP INDEX "{name}"')
        with cursor.connection.cursor().copy(
            f"COPY project_memories ({COLUMNS}) FROM STDIN"
        ) as copy:
            for project_id in project_ids:
                for _ in range(each):
                    copy.write_row(memory_row(rng, project_id, now, encoding, names))
        if rebuilt:
            cursor.execute("SET maintenance_work_mem = '1GB'")
            for _, definition in gin_indexes:
                cursor.execute(definition)
        cursor.execute("VACUUM ANALYZE project_memories")
    print(f"seeded {', '.join(slugs[:3])}{', ...' if projects > 3 else ''}:"
          f" {size} memories in {time.perf_counter() - started:.1f} s")  # fmt: skip
    print(f"project ids {project_ids[0]}..{project_ids[-1]}")


def embed() -> None:
    """Embed every memory still without a fresh vector (as ``manage.py embed_memories``),
    then report the rate and what the vectors take on disk."""
    started = time.perf_counter()
    total = sum(embeddings.backfill(batch=1000))
    seconds = time.perf_counter() - started
    index = embeddings.create_nearest_index()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_size_pretty(pg_table_size(%s)), pg_size_pretty(pg_indexes_size(%s)),"
            " pg_size_pretty(pg_table_size('project_memories')),"
            " pg_size_pretty(pg_indexes_size('project_memories'))",
            [embeddings.EMBEDDINGS, embeddings.EMBEDDINGS],
        )
        vectors, vector_indexes, table, indexes = cursor.fetchone()
    print(
        f"embedded {total} memories in {seconds:.1f} s"
        f" ({total / max(seconds, 1e-9):,.0f} a second);"
        f" vectors {vectors} + indexes {vector_indexes}"
        f" ({'with the pgvector index' if index else 'no pgvector'}); memories {table}"
        f" + indexes {indexes}"
    )


if __name__ == "__main__":
    args = sys.argv[1:] or ["10000"]
    projects = 1
    embedding = "--no-embeddings" not in args
    args = [arg for arg in args if arg != "--no-embeddings"]
    if args[0].startswith("--projects="):
        projects = int(args.pop(0).split("=", 1)[1])
    for arg in args:
        main(int(arg), projects)
    seed_global()
    if embedding:
        embed()
