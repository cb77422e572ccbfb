"""Demo data that makes every page meaningful on first run."""

from __future__ import annotations

import random
import secrets
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management.base import BaseCommand
from django.db import transaction
from django.db.models import Count, Max
from django.utils import timezone

from knowledge import supersedes
from memories import services
from memories.actors import Actor
from memories.models import (
    Memory,
    MemoryType,
    Project,
    ReviewStatus,
    Run,
    RunMemory,
    Source,
)
from memories.services import uses
from policies.compression import compress_memories
from policies.conflicts import find_conflicts
from policies.consolidation import consolidate_memories
from policies.decay import decay_memories
from policies.eviction import evict_memories
from policies.expiry import expire_memories
from policies.runner import JobResult, record_run
from policies.scratch import clear_run_scratch
from policies.staleness import memories_mark_changed
from policies.tiers import update_tiers

REVIEWERS_GROUP = "Reviewers"
REVIEWER_PERMISSIONS = [
    "review_memory",
    "review_global_memory",
    "view_memory",
    "change_memory",
    "add_memory",
    "view_project",
    "view_memorypolicy",
    "view_run",
    "view_runmemory",
    "view_memoryevent",
]

# (type, content, tags)
DEMO_MEMORIES: list[tuple[str, str, list[str]]] = [
    ("warning", "Full test suite required when modifying src/core/.", ["src/core/**", "testing"]),
    ("warning", "Never call the payments API without an idempotency key.", ["src/payments/**"]),
    ("warning", "Migrations on the events table lock it for minutes; use batches.", ["migrations"]),
    ("warning", "The staging database is shared: do not truncate tables there.", ["database"]),
    (
        "warning",
        "Do not log request bodies: they carry customer addresses.",
        ["logging", "privacy"],
    ),
    (
        "warning",
        "src/legacy/ has no tests; change it only with a characterization test first.",
        ["src/legacy/**"],
    ),
    ("warning", "Timezone bugs: always store UTC, convert at the edge.", ["datetime", "src/**"]),
    (
        "warning",
        "The search index rebuild takes 40 minutes; never trigger it in a request.",
        ["search", "src/search/**"],
    ),
    (
        "pattern",
        "Services own writes: put business logic in services.py, not in views.",
        ["src/**/services.py", "architecture"],
    ),
    (
        "pattern",
        "Use select_related for foreign keys shown in list views.",
        ["performance", "views"],
    ),
    (
        "pattern",
        "Feature flags live in config/flags.py and default to off.",
        ["config/**", "flags"],
    ),
    ("pattern", "API errors use the shape {error: {code, message, fields}}.", ["src/api/**"]),
    ("pattern", "Background jobs take ids, never model instances.", ["celery", "src/tasks/**"]),
    ("pattern", "Tests use factories from tests/factories.py; no fixtures files.", ["tests/**"]),
    ("pattern", "Money is stored as integer cents with a currency code.", ["src/payments/**"]),
    ("pattern", "Each HTTP client call has a timeout of at most 10 seconds.", ["http", "src/**"]),
    (
        "learning",
        "The flaky test_checkout failure was a missing freeze_time; fixed by pinning now.",
        ["tests/test_checkout.py", "flaky"],
    ),
    ("learning", "Bulk updates of over 10k rows time out; batch by 5k ids.", ["database"]),
    ("learning", "The CSV importer needs utf-8-sig to strip Excel's BOM.", ["src/importers/**"]),
    ("learning", "Redis eviction policy must be noeviction for the Celery broker.", ["celery"]),
    (
        "learning",
        "Rendering the invoice PDF is 80% font loading; cache the fonts.",
        ["src/invoices/**", "performance"],
    ),
    (
        "learning",
        "GIN indexes on tags made the tag filter 30x faster.",
        ["database", "performance"],
    ),
    (
        "learning",
        "Login throttling counts per IP and per account; both are needed.",
        ["src/auth/**", "security"],
    ),
    (
        "learning",
        "The mobile client sends dates as local time without an offset.",
        ["src/api/**", "datetime"],
    ),
    ("context", "The project is a B2B invoicing platform; customers are accountants.", ["product"]),
    ("context", "Deploys happen Tuesday and Thursday mornings; freeze on Fridays.", ["deploy"]),
    ("context", "Python 3.11, Django 5.2, PostgreSQL 15 in production.", ["stack"]),
    (
        "context",
        "The core domain lives in src/core/: invoices, customers, ledgers.",
        ["src/core/**"],
    ),
    ("context", "On-call rota is in the ops handbook; page only for customer impact.", ["ops"]),
    ("context", "src/api/v1 is frozen; new endpoints go to src/api/v2.", ["src/api/**"]),
]

SOURCES = [Source.HUMAN, Source.RUN, Source.LEARNING]
DEMO_JOBS: list[Callable[..., JobResult]] = [
    expire_memories,
    decay_memories,
    update_tiers,
    clear_run_scratch,
    compress_memories,
    evict_memories,
    consolidate_memories,
    find_conflicts,
]


# The password the README publishes for the demo reviewer.
PUBLISHED_PASSWORD = "review-the-memories"
HISTORY_TASKS = [
    "Fix the invoice PDF layout",
    "Add a CSV export of payments",
    "Upgrade the ORM",
    "Tidy the checkout tests",
    "Speed up the ledger report",
    "Handle bank holidays in due dates",
]
PUBLISHED_ADMIN_PASSWORD = "administer-the-memories"


class Command(BaseCommand):
    help = "Create the demo project (slug 'demo') with memories, runs and a reviewer account."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--reset", action="store_true", help="Delete the demo project first.")

    @transaction.atomic
    def handle(self, *args: Any, reset: bool = False, **options: Any) -> None:
        password = self._password()
        reviewer = self._reviewer(password)
        admin_password = self._password(settings.DEMO_ADMIN_PASSWORD, PUBLISHED_ADMIN_PASSWORD)
        self._admin(admin_password)
        if reset:
            Project.objects.filter(slug="demo").delete()
        if Project.objects.filter(slug="demo").exists():
            self.stdout.write("Demo project already present (use --reset to rebuild it).")
        else:
            self._seed(reviewer)
        count = Memory.objects.filter(project__slug="demo").count()
        self.stdout.write(f"Demo project 'demo' has {count} memories.")
        self.stdout.write(f"Reviewer login: username {settings.DEMO_USERNAME} password {password}")
        self.stdout.write(
            f"Administrator login (/admin/): username {settings.DEMO_ADMIN_USERNAME}"
            f" password {admin_password}"
        )

    def _password(self, configured: str | None = None, published: str = PUBLISHED_PASSWORD) -> str:
        """A demo account's password (the reviewer's by default): the published one only
        while DEBUG is on; a production server gets a random one (printed once, here) unless
        one of its own is set (DEMO_PASSWORD, DEMO_ADMIN_PASSWORD)."""
        configured = str(settings.DEMO_PASSWORD if configured is None else configured)
        if settings.DEBUG or configured != published:
            return configured
        return secrets.token_urlsafe(18)

    def _admin(self, password: str) -> Any:
        """A superuser for the admin: policy jobs, schedules, API keys, members."""
        user, _ = get_user_model().objects.get_or_create(
            username=settings.DEMO_ADMIN_USERNAME, defaults={"email": "admin@example.com"}
        )
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
        return user

    def _reviewer(self, password: str) -> Any:
        group, _ = Group.objects.get_or_create(name=REVIEWERS_GROUP)
        group.permissions.set(
            Permission.objects.filter(
                content_type__app_label="memories", codename__in=REVIEWER_PERMISSIONS
            )
        )
        user_model = get_user_model()
        user, _ = user_model.objects.get_or_create(
            username=settings.DEMO_USERNAME, defaults={"email": "reviewer@example.com"}
        )
        user.is_staff = True
        user.set_password(password)
        user.save()
        user.groups.add(group)
        return user

    def _seed(self, reviewer: Any) -> None:
        rng = random.Random(20261121)
        system = Actor.system("seed_demo")
        human = Actor.for_user(reviewer)
        project = services.project_create(
            name="Demo: invoicing platform",
            slug="demo",
            description="An agent team working on a B2B invoicing code base.",
        )
        runs = [
            services.run_start(
                project=project,
                external_id=f"run-{number:03d}",
                task_title=title,
                write_scope=scope,
                actor=system,
            )[0]
            for number, (title, scope) in enumerate(
                [
                    ("Add VAT rounding to invoices", ["src/core/invoices.py"]),
                    ("Fix flaky checkout test", ["tests/test_checkout.py"]),
                    ("Speed up the customer list", ["src/api/v2/customers.py"]),
                    ("Import bank statements from CSV", ["src/importers/**"]),
                    ("Rotate API tokens", ["src/auth/**"]),
                ],
                start=1,
            )
        ]
        memories: list[Memory] = []
        # Two passes over the catalogue give 60 memories, each pass with its own sources.
        for copy in range(2):
            for index, (memory_type, content, tags) in enumerate(DEMO_MEMORIES):
                source = SOURCES[(index + copy) % 3]
                text = (
                    content
                    if copy == 0
                    else f"{content} (seen again in {runs[index % 5].external_id})"
                )
                memories.append(
                    services.memory_create(
                        project=project,
                        type=memory_type,
                        content=text,
                        tags=tags,
                        source=source,
                        source_run=runs[index % 5] if source == Source.RUN else None,
                        relevance_score=round(rng.uniform(0.3, 1.0), 2),
                        actor=human if source == Source.HUMAN else system,
                    )
                )
        # Give runs memories and record outcomes so confidence moves both ways.
        for number, run in enumerate(runs):
            chosen = rng.sample(memories, 6)
            services.run_give_memories(
                run=run, ranked=[(memory.pk, memory.confidence) for memory in chosen]
            )
            if number < 4:
                services.run_record_outcome(
                    run=run, outcome="failed" if number % 2 else "succeeded", actor=system
                )
        # Every review status, pins, tiers and expiry states.
        pending = [m for m in memories if m.review_status == ReviewStatus.PENDING]
        services.memories_approve(memory_ids=[m.pk for m in pending[:8]], actor=human)
        services.memories_reject(
            memory_ids=[m.pk for m in pending[8:12]], actor=human, reason="too vague to act on"
        )
        services.memories_set_pinned(
            memory_ids=[memories[0].pk, memories[1].pk], pinned=True, actor=human
        )
        # A few weeks of use: earlier runs, each given some memories (a few favourites more
        # often), most of them successful. A memory's uses are the runs given it, and its
        # last use the last of them (the tiers job below sorts them into hot, warm, cold).
        now = timezone.now()
        favourites = memories[:12]
        for week in range(24):
            started = now - timedelta(days=60 - week * 2.5, hours=rng.randint(0, 12))
            run, _ = services.run_start(
                project=project,
                external_id=f"history-{week + 1:03d}",
                task_title=rng.choice(HISTORY_TASKS),
                write_scope=[],
                actor=system,
            )
            chosen = rng.sample(favourites, 3) + rng.sample(memories[12:], 3)
            services.run_give_memories(
                run=run, ranked=[(memory.pk, round(rng.uniform(0.4, 0.9), 3)) for memory in chosen]
            )
            services.run_record_outcome(
                run=run, outcome="failed" if week % 5 == 4 else "succeeded", actor=system
            )
            Run.objects.filter(pk=run.pk).update(
                started_at=started, finished_at=started + timedelta(minutes=rng.randint(3, 40))
            )
        given = (
            RunMemory.objects.filter(run__project=project)
            .values("memory_id")
            .annotate(times=Count("id"), last=Max("run__started_at"))
        )
        uses.write_counts({row["memory_id"]: (row["times"], row["last"]) for row in given})
        for memory in [m for m in memories if m.type == MemoryType.CONTEXT][:3]:
            services.memory_update(memory=memory, actor=system, expires_at=now + timedelta(days=3))
        # A global memory waiting for a reviewer, and one approved.
        for content, approve in [
            ("Never commit secrets; use the secret manager.", True),
            ("Prefer small pull requests under 400 lines.", False),
        ]:
            shared = services.memory_create(
                project=None, type="pattern", content=content, source="run", actor=system
            )
            if approve:
                services.memory_approve(memory=shared, actor=human)
        # A merge of code in src/core/ asks for the rules about it to be looked at again.
        memories_mark_changed(
            project=project, paths=["src/core/invoices.py"], ref="merge 4f2c1ab", actor=system
        )
        # A reviewed rule and a run's learning that contradicts it; the agent's proposal to
        # replace the rule waits for a reviewer (the pair is on the conflicts page).
        rule = services.memory_create(
            project=project,
            type="pattern",
            content="Retry calls to the payment provider at most 3 times, with exponential"
            " backoff.",
            tags=["src/payments/**"],
            source=Source.HUMAN,
            actor=human,
        )
        learned = services.memory_create(
            project=project,
            type="learning",
            content="Retry calls to the payment provider up to 5 times, with exponential"
            " backoff: 3 was not enough during the provider's outage.",
            tags=["src/payments/**"],
            source=Source.RUN,
            source_run=runs[2],
            actor=system,
        )
        supersedes.memory_supersede(
            memory=rule, by=learned, actor=system, reason="run-003 needed 5 retries"
        )
        # Each maintenance job run once, as the beat would, so the dashboard shows their
        # last runs (decay lowers the long-unused memories; consolidation merges a twin).
        for job in DEMO_JOBS:
            record_run(job)
