"""The OpenAPI schema builds without warnings, validates, and documents every route."""

from __future__ import annotations

import re
from io import StringIO

import pytest
import yaml
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_schema_builds_without_warnings_and_validates(tmp_path):
    target = tmp_path / "schema.yaml"
    call_command(
        "spectacular", "--fail-on-warn", "--validate", "--file", str(target), stderr=StringIO()
    )
    schema = yaml.safe_load(target.read_text())
    paths = schema["paths"]
    assert "/api/projects/{project}/memories" in paths
    memories = paths["/api/projects/{project}/memories"]
    parameters = {p["name"] for p in memories["get"]["parameters"]}
    assert {"type", "active", "tags", "source", "reviewStatus", "q", "expiringBefore"} <= parameters
    assert {"ordering", "limit", "cursor"} <= parameters
    create = memories["post"]
    assert {"201", "400", "401", "404", "409", "413", "415"} <= set(create["responses"])
    assert {p["name"] for p in create["parameters"]} >= {"Idempotency-Key"}
    for path, operations in paths.items():
        for method, operation in operations.items():
            if method == "parameters":
                continue
            assert "401" in operation["responses"], (method, path)


def test_docs_page_is_served(client, reviewer):
    client.force_login(reviewer)
    assert client.get("/api/docs/").status_code == 200
    assert client.get("/api/schema/").status_code == 200


def _choices(node, where=""):
    """Every ``oneOf`` in the schema, with where it is."""
    if isinstance(node, dict):
        if "oneOf" in node:
            yield where, node["oneOf"]
        for key, value in node.items():
            yield from _choices(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _choices(value, f"{where}/{index}")


def _takes_blank(branch):
    return (
        branch.get("type") == "string"
        and branch.get("minLength", 0) == 0
        and re.search(branch.get("pattern", ""), "") is not None
    )


def test_a_blank_string_matches_one_branch_of_each_choice(client, reviewer):
    """A field that takes "" (a branch of at most 0 characters) takes it in one branch only:
    in two, ``oneOf`` refuses what the service accepts ("category": "")."""
    client.force_login(reviewer)
    schema = client.get("/api/schema/", {"format": "json"}).json()
    choices = [
        (where, branches)
        for where, branches in _choices(schema)
        if any(branch.get("maxLength") == 0 for branch in branches)
    ]
    assert any("Preference" in where for where, _ in choices)
    for where, branches in choices:
        assert sum(map(_takes_blank, branches)) == 1, (where, branches)
