"""create_api_key: a key for a project, printed last, and the project made on request."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from memories.models import Project
from tests.api.conftest import url

pytestmark = pytest.mark.django_db


def test_create_api_key_command_prints_the_key_last(project):
    out = StringIO()
    call_command("create_api_key", project.slug, "--name", "ci", stdout=out, stderr=StringIO())
    token = out.getvalue().strip().splitlines()[-1]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert client.get(url(project, "memories")).status_code == 200


def test_create_api_key_can_create_the_project():
    with pytest.raises(CommandError, match="--create-project"):
        call_command("create_api_key", "new-one", "--name", "x", stdout=StringIO())
    out = StringIO()
    call_command(
        "create_api_key",
        "new-one",
        "--name",
        "x",
        "--create-project",
        stdout=out,
        stderr=StringIO(),
    )
    assert out.getvalue().strip().startswith("ml_")
    assert Project.objects.get(slug="new-one").policy.selection_limit == 10
