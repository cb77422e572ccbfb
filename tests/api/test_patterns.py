"""Patterns cannot stall the service: a glob's complexity is bounded and refused with a 400
naming the limit, repeated ``**/`` segments cost what one does, and a context request's time
budget stays well inside the worker's timeout."""

from __future__ import annotations

import os
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memories.models import Memory
from memories.tags import (
    MAX_DOUBLE_STARS,
    MAX_WILDCARDS,
    glob_matches,
    glob_to_regex,
    tag_matches_scope,
)
from tests.api.conftest import url

pytestmark = pytest.mark.django_db

RUN_OF_DOUBLE_STARS = "**/" * 160 + "x.py"  # 484 characters
TOO_MANY_STARS = "/".join(["**", "a"] * (MAX_DOUBLE_STARS + 1)) + "/x.py"
TOO_MANY_WILDCARDS = "/".join(["*?"] * (MAX_WILDCARDS // 2 + 1))


def test_a_run_of_double_stars_is_one():
    assert glob_to_regex(RUN_OF_DOUBLE_STARS) == glob_to_regex("**/x.py")
    assert glob_to_regex("src/****/x.py") == glob_to_regex("src/**/x.py")


@pytest.mark.parametrize("pattern", [TOO_MANY_STARS, TOO_MANY_WILDCARDS])
@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("changes", lambda p: {"paths": ["src/a.py", p], "ref": "abc"}, "paths"),
        ("context", lambda p: {"tokenBudget": 100, "writeScope": [p]}, "writeScope"),
        ("memories", lambda p: {"type": "pattern", "content": "x", "tags": [p]}, "tags"),
    ],
)
def test_a_glob_too_complex_is_a_400_naming_the_limit(agent, project, pattern, path, body, field):
    response = agent.post(url(project, path), body(pattern), format="json")
    assert response.status_code == 400, response.content
    (message,) = response.json()["error"]["fields"][field]
    assert "the limit is" in message
    assert not Memory.objects.exists()


def test_adversarial_globs_answer_within_their_budget(agent, project, make_memory):
    for n in range(30):
        tags = [f"{'**/' * 60}{n}/{t}/*.py" for t in range(20)]  # 20 tags of 190 characters
        make_memory(project=project, content=f"Rule {n}.", tags=tags)
    # Matches the scope below, and has a deep tag that the scope's globs almost match.
    make_memory(project=project, content="Deep.", tags=["x/a.py", "src/a/b/c/d/e/f/g/h/i/y.py"])
    scope = [f"{'**/' * 160}x/**/{n}*.py" for n in range(100)]  # up to 490 characters each
    started = time.monotonic()
    response = agent.post(
        url(project, "context"),
        {"tokenBudget": 500, "writeScope": scope, "timeBudgetMs": 2000},
        format="json",
    )
    assert response.status_code == 200, response.content
    changes = agent.post(
        url(project, "changes"), {"paths": scope[:40], "ref": "abc"}, format="json"
    )
    assert changes.status_code == 200, changes.content
    assert time.monotonic() - started < 5


def test_the_time_budget_stays_well_inside_the_worker_timeout(agent, project):
    response = agent.post(
        url(project, "context"), {"tokenBudget": 100, "timeBudgetMs": 20_000}, format="json"
    )
    assert response.status_code == 400
    assert "10000" in response.json()["error"]["fields"]["timeBudgetMs"][0]


@pytest.mark.transactional
@pytest.mark.django_db(transaction=True)
def test_a_statement_past_the_timeout_is_a_503_in_the_error_shape(project, make_memory):
    """A request held up in the database (here, waiting for a row another session holds)
    is cancelled at the statement timeout and answered 503 with what to do; nothing is
    written."""
    import psycopg
    from django.db import connection

    from tests.api.conftest import client_with_key
    from tests.support import database_url

    memory = make_memory(project=project, content="Held.")
    agent = client_with_key(project)
    agent.raise_request_exception = False
    with psycopg.connect(database_url()) as other:
        other.execute("SELECT 1 FROM project_memories WHERE id = %s FOR UPDATE", [memory.pk])
        with connection.cursor() as cursor:
            cursor.execute("SET statement_timeout = 300")
        try:
            started = time.monotonic()
            response = agent.patch(
                url(project, f"memories/{memory.pk}"), {"content": "Changed."}, format="json"
            )
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET statement_timeout")
    assert time.monotonic() - started < 5
    assert response.status_code == 503, response.content
    error = response.json()["error"]
    assert error["code"] == "too_slow"
    assert "Narrow it" in error["message"]
    assert response["Retry-After"] == "5"
    assert Memory.objects.get(pk=memory.pk).content == "Held."


def test_web_workers_cancel_statements_well_inside_their_timeout():
    import subprocess
    import sys

    code = (
        "import runpy, os; runpy.run_path('config/gunicorn.conf.py');"
        "from django.conf import settings; import django; django.setup();"
        "print(settings.DATABASES['default']['OPTIONS']['options'])"
    )
    drop = {"DATABASE_STATEMENT_TIMEOUT_MS", "PROMETHEUS_MULTIPROC_DIR"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env |= {"DJANGO_SETTINGS_MODULE": "config.settings", "VAR_DIR": "/tmp/memory-layer-conf"}
    shown = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert shown.stdout.strip() == "-c statement_timeout=10000 -c jit=off", shown.stderr


def test_no_connection_compiles_statements_unless_asked(db):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"


def test_stored_patterns_with_runs_are_collapsed_by_the_migration(project, make_memory):
    from importlib import import_module

    from django.apps import apps
    from django.db import connection

    memory = make_memory(project=project, content="Old.", tags=["src/**/**/**/x.py"])
    long_form = "^src/(.*/)?(.*/)?(.*/)?x\\.py$"
    Memory.objects.filter(pk=memory.pk).update(tag_patterns=[long_form])
    migration = import_module("memories.migrations.0016_collapse_glob_runs")
    with connection.schema_editor() as editor:
        migration.collapse(apps, editor)
    (pattern,) = Memory.objects.get(pk=memory.pk).tag_patterns
    assert pattern == glob_to_regex("src/**/x.py") != long_form


@settings(max_examples=400, deadline=None)
@given(
    pattern=st.lists(
        st.sampled_from(["a", "b", "/", "*", "?", "**", "**/", "."]), min_size=1, max_size=8
    ).map("".join),
    path=st.lists(st.sampled_from(["a", "b", "/", "."]), max_size=10).map("".join),
)
def test_the_linear_matcher_says_what_the_regex_says(pattern, path):
    assert glob_matches(pattern, path) == bool(re.search(glob_to_regex(pattern), path))


def test_a_glob_that_would_backtrack_is_matched_at_once():
    started = time.monotonic()
    assert not tag_matches_scope("**/*a*a*a*a*a*a*a*a*a*a*b", ["x/" + "a" * 60])
    assert not tag_matches_scope("x/" + "a" * 60, ["**/*a*a*a*a*a*a*a*a*a*a*b"])
    assert time.monotonic() - started < 0.5
