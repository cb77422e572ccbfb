"""What a production server must not do: log secrets from query strings, publish the demo
password, answer a chunked body as an empty one; and whether the API's docs are public."""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.test import RequestFactory

from tests.support import ROOT, gunicorn_server, http_get


@pytest.mark.django_db
def test_the_access_log_holds_paths_not_query_strings(tmp_path):
    log = tmp_path / "access.log"
    with gunicorn_server(tmp_path, workers=1, ACCESS_LOG=str(log)) as port:
        status, _, _ = http_get(port, "/api/projects/?api_key=ml_leaked_0123456789abcdef")
    assert status == 401
    text = log.read_text()
    assert "/api/projects/" in text
    assert "ml_leaked" not in text
    assert "api_key" not in text


@pytest.mark.django_db
def test_seed_demo_without_debug_makes_a_random_password_and_prints_it_once(settings):
    settings.DEBUG = False
    out = StringIO()
    call_command("seed_demo", stdout=out)
    lines = out.getvalue().strip().splitlines()
    password = next(line for line in lines if line.startswith("Reviewer login")).rsplit(" ", 1)[1]
    admin_password = next(line for line in lines if line.startswith("Administrator")).split()[-1]
    assert admin_password != "administer-the-memories"
    assert len(admin_password) >= 20
    assert password != "review-the-memories"
    assert len(password) >= 20
    request = RequestFactory().post("/accounts/login/")
    assert authenticate(request, username="reviewer", password="review-the-memories") is None
    assert authenticate(request, username="reviewer", password=password) is not None


def test_a_chunked_body_without_a_length_is_a_411_that_says_so(client):
    response = client.post(
        "/api/projects/demo/memories",
        data=b"",
        content_type="application/json",
        HTTP_TRANSFER_ENCODING="chunked",
    )
    assert response.status_code == 411
    error = response.json()["error"]
    assert error["code"] == "length_required"
    assert "Content-Length" in error["message"]


@pytest.mark.parametrize(("public", "status"), [("true", 200), ("false", 401)])
def test_the_api_schema_is_public_unless_configured_otherwise(public, status):
    code = (
        "import django; django.setup(); from django.test import Client;"
        "print(Client().get('/api/schema/').status_code)"
    )
    env = {**os.environ, "API_DOCS_PUBLIC": public, "DJANGO_SETTINGS_MODULE": "config.settings"}
    shown = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert shown.stdout.strip().splitlines()[-1] == str(status), shown.stderr
