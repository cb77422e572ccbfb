"""A database made before the knowledge layer existed migrates with everything kept: its
memories, their open and decided pairs, their embeddings, and the permissions that point
at them. Run in a database of its own (made and dropped here), through manage.py's migrate
as an operator runs it: first to where the store stood before (``memories`` 0021, every
other app but ``knowledge``), rows written with the models of that time, then to today."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from tests.support import database_url

pytestmark = pytest.mark.django_db

BEFORE = """
from django.core.management import call_command
from django.db.migrations.executor import MigrationExecutor
from django.db import connection

# (beat's tables first: every migrate ends by copying the beat schedule into them)
call_command("migrate", "django_celery_beat", verbosity=0)
call_command("migrate", "memories", "0021_run_feedback", verbosity=0)
for app in ("contenttypes", "auth", "admin", "sessions", "axes", "api", "assembly", "policies"):
    call_command("migrate", app, verbosity=0)
executor = MigrationExecutor(connection)
assert ("knowledge", "0001_initial") not in executor.loader.applied_migrations
old = executor.loader.project_state(("memories", "0021_run_feedback")).apps
Project, Memory = old.get_model("memories", "Project"), old.get_model("memories", "Memory")
Pair = old.get_model("memories", "MemoryPair")
Embedding = old.get_model("memories", "MemoryEmbedding")
project = Project.objects.create(name="Before", slug="before")
texts = ["Retries stop after 3 attempts.", "Retries stop after 5 attempts.",
         "Use the staging bucket.", "Use the staging bucket for uploads."]
memories = [Memory.objects.create(project=project, scope="project", type="learning",
                                  source="human", content=text, content_hash=f"h{n}",
                                  token_count=7, review_status="pending", confidence=1.0)
            for n, text in enumerate(texts)]
a, b, c, d = memories
Pair.objects.create(project=project, first=a, second=b, kind="conflict", similarity=0.8,
                    evidence={"signals": ["number"]}, first_hash="h0", second_hash="h1",
                    found_by="system:tests")
Pair.objects.create(project=project, first=c, second=d, kind="repeat", status="dismissed",
                    resolution="not_conflict", resolved_actor="user:reviewer",
                    resolved_at="2026-01-02T03:04:05Z", reason="both hold", similarity=0.9,
                    first_hash="h2", second_hash="h3", found_by="system:tests")
for memory in memories:
    Embedding.objects.create(memory=memory, project_id=project.pk, model="m",
                             content_hash=memory.content_hash, vector=[0.5, -0.25, 0.125])
# The pair's content type and permissions, as post_migrate made them for the models of that
# time (and none of the knowledge layer's).
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
assert not ContentType.objects.filter(app_label="knowledge").exists()
kind = ContentType.objects.get(app_label="memories", model="memorypair")
permission = Permission.objects.get(content_type=kind, codename="change_memorypair")
print(json.dumps({"memories": [m.pk for m in memories], "permission": permission.pk}))
"""

AFTER = """
from django.core.management import call_command
from django.contrib.auth.models import Permission

call_command("migrate", verbosity=0)
from knowledge.models import MemoryEmbedding, MemoryPair
from memories.models import Memory

pairs = [
    [p.first_id, p.second_id, p.kind, p.status, p.resolution, p.reason, p.evidence,
     p.first_hash, p.second_hash, p.resolved_at.isoformat() if p.resolved_at else None]
    for p in MemoryPair.objects.order_by("id")
]
vectors = {e.memory_id: [e.model, e.content_hash, e.vector]
           for e in MemoryEmbedding.objects.order_by("memory_id")}
permission = Permission.objects.get(codename="change_memorypair")
print(json.dumps({
    "memories": sorted(Memory.objects.values_list("id", flat=True)),
    "pairs": pairs, "vectors": vectors,
    "permission": [permission.pk, permission.content_type.app_label],
}))
call_command("makemigrations", "--check", "--dry-run", verbosity=0)
"""


def run(code: str, url: str) -> dict:
    script = (
        "import json, os, django\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings')\n"
        "django.setup()\n" + code
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=settings.BASE_DIR,
        env={**os.environ, "DATABASE_URL": url, "LOG_LEVEL": "WARNING"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def empty_database():
    name = f"memory_migrate_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url(), autocommit=True) as server:
        server.execute(f'CREATE DATABASE "{name}"')
    url = database_url().replace(f"/{connection.settings_dict['NAME']}", f"/{name}", 1)
    try:
        yield url
    finally:
        with psycopg.connect(database_url(), autocommit=True) as server:
            server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_database_from_before_the_knowledge_layer_migrates_with_everything_kept(
    empty_database,
):
    before = run(BEFORE, empty_database)
    after = run(AFTER, empty_database)
    a, b, c, d = before["memories"]
    assert after["memories"] == before["memories"]
    assert after["pairs"] == [
        [a, b, "conflict", "open", "", "", {"signals": ["number"]}, "h0", "h1", None],
        [c, d, "repeat", "dismissed", "not_conflict", "both hold", {}, "h2", "h3",
         "2026-01-02T03:04:05+00:00"],
    ]  # fmt: skip
    assert after["vectors"] == {
        str(memory): ["m", f"h{n}", [0.5, -0.25, 0.125]]
        for n, memory in enumerate(before["memories"])
    }
    # The permission is the same row, now the knowledge layer's (a group keeps it).
    assert after["permission"] == [before["permission"], "knowledge"]
