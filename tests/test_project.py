"""The project as a whole: checks clean, migrations in step with the models."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[1]


def test_system_checks_are_clean():
    out = StringIO()
    call_command("check", "--fail-level", "WARNING", stdout=out)
    assert "no issues" in out.getvalue()


@pytest.mark.django_db
def test_migrations_match_the_models():
    call_command("makemigrations", "--check", "--dry-run", stdout=StringIO())


# Run by ``manage.py shell`` on the embedded server: whether pg_trgm is installed, then how
# many memories consolidation merged of a near-duplicate pair.
_CONSOLIDATE_ON_EMBEDDED = """
from django.db import connection
from policies.consolidation import consolidate_memories
from tests.factories import MemoryFactory, ProjectFactory
with connection.cursor() as cursor:
    cursor.execute("SELECT count(*) FROM pg_extension WHERE extname = 'pg_trgm'")
    print(cursor.fetchone()[0])
note = "Always lock the invoice row before updating its total, or two workers lose updates."
project = ProjectFactory()
MemoryFactory(project=project, content=note)
MemoryFactory(project=project, content="Please a" + note[1:])
print(consolidate_memories().total)
"""


def test_a_machine_without_a_database_server_migrates_and_consolidates():
    """With no DATABASE_URL the service runs on the embedded PostgreSQL, which ships no
    pg_trgm: the migrations apply all the same, and consolidation merges through the SQL
    form of the trigram functions."""
    var_dir = tempfile.mkdtemp(prefix="ml-")  # short: the server's socket lives in it
    env = {**os.environ, "DATABASE_URL": "", "VAR_DIR": var_dir}
    run = functools.partial(
        subprocess.run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    try:
        migrated = run([sys.executable, "manage.py", "migrate", "--noinput"])
        assert migrated.returncode == 0, migrated.stderr
        consolidated = run(
            [sys.executable, "manage.py", "shell", "--no-imports", "-c", _CONSOLIDATE_ON_EMBEDDED]
        )
        assert consolidated.returncode == 0, consolidated.stderr
        assert consolidated.stdout.split() == ["0", "1"]
    finally:
        shutil.rmtree(var_dir, ignore_errors=True)
