"""Health, readiness, metrics, request ids, logs, security headers and production settings."""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import OperationalError

from config.celery import app as celery_app
from config.env import read_env_file
from memories import services
from ops import requestid
from ops.logs import JsonFormatter
from tests.api.conftest import client_with_key

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db


def test_healthz_answers_without_the_database(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_checks_the_database_and_the_broker(client):
    body = client.get("/readyz").json()
    assert body["ready"] is True
    assert body["checks"]["database"]["ok"]
    assert body["checks"]["broker"]["ok"]


def test_readyz_is_503_and_names_an_unreachable_broker(client):
    original = celery_app.conf.broker_url
    celery_app.conf.broker_url = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    try:
        response = client.get("/readyz")
    finally:
        celery_app.conf.broker_url = original
    assert response.status_code == 503
    body = response.json()
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["broker"]["ok"] is False
    assert body["checks"]["broker"]["error"]


def test_metrics_need_staff_or_the_token(client, settings, admin_client):
    settings.METRICS_TOKEN = "scrape-me-" + "x" * 30
    assert client.get("/metrics").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    scraped = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {settings.METRICS_TOKEN}")
    assert scraped.status_code == 200
    assert admin_client.get("/metrics").status_code == 200
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 403


def _sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample in a Prometheus exposition (0 when absent)."""
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        metric, _, value = line.rpartition(" ")
        base, _, rest = metric.partition("{")
        got = ",".join(sorted(rest.rstrip("}").split(","))) if rest else ""
        if base == name and got == want:
            return float(value)
    return 0.0


def test_metrics_count_assembly_cache_sources_requests_and_jobs(
    project, make_memory, admin_client, settings
):
    from policies.runner import record_run
    from policies.tiers import update_tiers

    settings.ASSEMBLY_CACHE_SECONDS = 60
    make_memory(project=project, content="Run the linters before pushing", tags=["src/**"])
    agent = client_with_key(project)
    before = admin_client.get("/metrics").content.decode()
    body = {"intent": "linters", "writeScope": ["src/app.py"], "tokenBudget": 500}
    for _ in range(3):
        response = agent.post(f"/api/projects/{project.slug}/context", body, format="json")
        assert response.status_code == 200
    record_run(update_tiers)
    after = admin_client.get("/metrics").content.decode()

    def grew(name: str, **labels: str) -> float:
        return _sample(after, name, **labels) - _sample(before, name, **labels)

    assert grew("memory_assembly_duration_seconds_count", cache="miss") == 1
    assert grew("memory_assembly_duration_seconds_count", cache="hit") == 2
    assert grew("memory_cache_requests_total", result="hit") == 2
    assert 0 < _sample(after, "memory_cache_hit_ratio") <= 1
    assert grew("memory_source_latency_seconds_count", source="project") == 1
    assert "memory_source_errors_total" in after or "memory_source_errors" in after
    assert grew("http_requests_total", method="POST", endpoint="api:context", status="200") == 3
    assert grew("http_request_duration_seconds_count", method="POST", endpoint="api:context") == 3
    assert grew("memory_policy_job_runs_total", job="update_tiers", outcome="complete") == 1
    assert _sample(after, "memory_policy_job_last_finished_timestamp_seconds", job="update_tiers")


def test_a_request_id_is_taken_or_made_and_sent_back(client):
    given = client.get("/healthz", HTTP_X_REQUEST_ID="trace-42.a:b")
    assert given["X-Request-ID"] == "trace-42.a:b"
    made = client.get("/healthz")
    assert len(made["X-Request-ID"]) == 32
    forged = client.get("/healthz", HTTP_X_REQUEST_ID="x\nFAKE LOG LINE")
    assert forged["X-Request-ID"] != "x\nFAKE LOG LINE"
    assert len(forged["X-Request-ID"]) == 32


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.addFilter(requestid.RequestIdFilter())
        self.lines: list[str] = []
        self.setFormatter(JsonFormatter())

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def log_lines():
    handler = _Records()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield handler.lines
    root.removeHandler(handler)
    root.setLevel(level)


def test_every_log_line_of_a_request_has_its_id_and_no_key_password_or_content(
    project, log_lines, client
):
    agent = client_with_key(project)
    secret_content = "The nightly build reads from bucket quartz-nine"
    response = agent.post(
        f"/api/projects/{project.slug}/memories",
        {"type": "learning", "content": secret_content},
        format="json",
        HTTP_X_REQUEST_ID="req-1",
    )
    assert response.status_code == 201
    missing = agent.get(f"/api/projects/{project.slug}/memories/999999", HTTP_X_REQUEST_ID="req-2")
    assert missing.status_code == 404
    client.post("/accounts/login/", {"username": "nobody", "password": "pw-never-logged-9"})
    entries = [json.loads(line) for line in log_lines]
    assert any(e["request_id"] == "req-2" and "Not Found" in e["message"] for e in entries)
    assert all(
        e["request_id"] in {"req-1", "req-2", "-"} or len(e["request_id"]) == 32 for e in entries
    )
    text = "\n".join(log_lines)
    for never in (agent.token, secret_content, "pw-never-logged-9"):
        assert never not in text


def test_json_formatter_writes_one_object_per_record():
    record = logging.makeLogRecord({"msg": "hello %s", "args": ("world",), "levelname": "INFO"})
    record.request_id = "abc"
    record.extra_field = 7
    entry = json.loads(JsonFormatter().format(record))
    assert entry["message"] == "hello world"
    assert entry["request_id"] == "abc"
    assert entry["extra_field"] == 7


def test_security_headers_are_sent(client):
    response = client.get("/healthz")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["X-Frame-Options"] == "DENY"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert "camera=()" in response["Permissions-Policy"]


def test_an_unreachable_database_is_a_503_in_the_error_shape(rf, settings):
    from ops.views import server_error

    request = rf.get("/api/projects/")
    try:
        raise OperationalError("connection refused")
    except OperationalError:
        response = server_error(request)
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert json.loads(response.content)["error"]["code"] == "unavailable"
    try:
        raise ValueError("a bug")
    except ValueError:
        page = server_error(rf.get("/review/"))
    assert page.status_code == 500
    assert b"Server error" in page.content


@pytest.mark.parametrize(
    ("path", "json_answer"), [("/mcp", True), ("/api/x", True), ("/mcpx", False)]
)
def test_a_server_error_under_mcp_is_json_too(rf, path, json_answer):
    from ops.views import server_error

    try:
        raise ValueError("a bug")
    except ValueError:
        response = server_error(rf.post(path))
    assert response.status_code == 500
    if json_answer:
        assert json.loads(response.content)["error"]["code"] == "server_error"
    else:
        assert b"Server error" in response.content


def _production_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY"}}
    return {
        **env,
        "DEBUG": "false",
        "ALLOWED_HOSTS": "memory.example.com",
        "DATABASE_URL": env.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres"),
        **extra,
    }


PRODUCTION_ENV = ROOT / "production.env.example"


def test_check_deploy_is_clean_with_the_documented_production_variables():
    """production.env.example, the one list of what a deployment sets, as it is: only the
    secret key it says to generate is added. Nothing else of this machine's environment."""
    documented = read_env_file(PRODUCTION_ENV)
    assert documented["SECRET_KEY"] == "", "a key written in the docs is not a secret"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
        **documented,
        "SECRET_KEY": secrets.token_urlsafe(50),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_every_documented_production_variable_is_one_the_service_reads():
    documented = set(read_env_file(PRODUCTION_ENV)) - {"POSTGRES_PASSWORD"}  # compose's own
    # .env.example names every variable the settings read, set or commented out.
    every = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.M))
    assert documented <= every, documented - every


@pytest.mark.parametrize("key", ["", "short-key", "insecure-local-development-key-change-me"])
def test_production_refuses_to_start_without_a_real_secret_key(key):
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=_production_env(SECRET_KEY=key),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "SECRET_KEY must be a random value of at least 50 characters" in result.stderr


def test_api_keys_are_stored_hashed(project):
    api_key, token = services.api_key_create(project=project, name="ci")
    assert token.split("_", 2)[2] not in api_key.secret_hash
    assert len(api_key.secret_hash) == 64
