"""The project as a whole: checks clean, migrations in step with the models."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command


def test_system_checks_are_clean():
    out = StringIO()
    call_command("check", "--fail-level", "WARNING", stdout=out)
    assert "no issues" in out.getvalue()


@pytest.mark.django_db
def test_migrations_match_the_models():
    call_command("makemigrations", "--check", "--dry-run", stdout=StringIO())
