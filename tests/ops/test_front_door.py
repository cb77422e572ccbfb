"""What a new user meets first: a start with no warnings, a clean stop, a port of their own."""

from __future__ import annotations

import logging

import pytest
from django.conf import settings
from kombu import Connection


def test_the_default_broker_names_its_host_so_kombu_does_not_warn(caplog):
    assert settings.CELERY_BROKER_URL.startswith("filesystem://")
    with caplog.at_level(logging.WARNING, logger="kombu"):
        Connection(
            settings.CELERY_BROKER_URL,
            transport_options=settings.CELERY_BROKER_TRANSPORT_OPTIONS,
        ).as_uri()
        Connection(settings.CELERY_BROKER_URL).clone()
    assert not [r for r in caplog.records if "No hostname" in r.getMessage()]


@pytest.mark.parametrize("url", ["filesystem://"])
def test_a_bare_filesystem_url_is_what_warned(url, caplog):
    """The check above can fail: kombu does warn for the bare URL."""
    with caplog.at_level(logging.WARNING, logger="kombu"):
        Connection(url).clone()
    assert any("No hostname" in r.getMessage() for r in caplog.records)


def _database_url() -> str:
    from urllib.parse import quote

    from django.db import connection

    db = connection.settings_dict
    host = db["HOST"] or ""
    where = quote(host, safe="") if host.startswith("/") else f"{host}:{db['PORT'] or 5432}"
    return f"postgres://{db['USER']}@{where}/{db['NAME']}"


@pytest.mark.django_db
def test_make_run_starts_without_warnings_and_ctrl_c_stops_it_cleanly(tmp_path):
    """`manage.py serve` (what `make run` ends in) on a port of its own: no warning while it
    starts; Ctrl-C (SIGINT to the whole process group, as a terminal sends it) stops every
    process within the time it gives them, and it exits 0, not as a crash would."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time

    import httpx2

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "VAR_DIR": str(tmp_path),
        "CELERY_BROKER_URL": "filesystem://localhost/",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("PYTEST_CURRENT_TEST", None)
    log = (tmp_path / "serve.log").open("w+")
    serve = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--addr", f"127.0.0.1:{port}"],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            assert serve.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < deadline, "serve did not start"
            time.sleep(0.3)
        time.sleep(4)  # the worker and beat are up too
        os.killpg(serve.pid, signal.SIGINT)
        code = serve.wait(timeout=45)
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGKILL)
    output = (tmp_path / "serve.log").read_text()
    assert code == 0, output
    assert "Memory Layer stopped." in output
    assert "SIGKILL" not in output, output
    assert "No hostname was supplied" not in output, output
    assert "exited with 'signal" not in output, output  # the worker stopped its own pool
    with pytest.raises(ProcessLookupError):
        os.killpg(serve.pid, 0)  # nothing of it is left


@pytest.mark.django_db
@pytest.mark.parametrize("where", ["page-404", "page-403", "api-404", "api-403"])
def test_a_plain_403_or_404_is_logged_once_without_a_traceback(
    where, client, plain_user, project, make_memory, caplog
):
    """Through the logging configuration (a handler records what reaches the console)."""
    from memories.models import Membership

    Membership.objects.create(user=plain_user, project=project, role="viewer")
    memory = make_memory(project=project)
    client.force_login(plain_user)
    method, url, status = {
        "page-404": ("get", "/review/projects/nope/queue/", 404),
        "page-403": ("post", f"/review/memories/{memory.pk}/approve/", 403),
        "api-404": ("get", "/api/projects/nope/memories", 404),
        "api-403": ("patch", f"/api/projects/{project.slug}/memories/{memory.pk}/approve", 403),
    }[where]
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    keep = Keep()
    logging.getLogger().addHandler(keep)
    try:
        assert getattr(client, method)(url).status_code == status
    finally:
        logging.getLogger().removeHandler(keep)
    lines = [r for r in records if r.name == "django.request"]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert lines[0].exc_info is None
    assert url in lines[0].getMessage()


@pytest.mark.django_db
def test_the_demo_prints_an_administrators_login(capsys, settings):
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    settings.DEBUG = True  # the published demo password (else a random one, printed)
    call_command("seed_demo")
    out = capsys.readouterr().out
    assert (
        f"Administrator login (/admin/): username {settings.DEMO_ADMIN_USERNAME}"
        f" password {settings.DEMO_ADMIN_PASSWORD}" in out
    )
    admin = get_user_model().objects.get(username=settings.DEMO_ADMIN_USERNAME)
    assert admin.is_superuser
    assert admin.check_password(settings.DEMO_ADMIN_PASSWORD)


@pytest.mark.django_db
def test_the_demo_tells_the_truth_about_uses():
    """A memory's uses in the demo are the runs it was given (with those of the near-twins
    merged into it), its last use the last of them."""
    from django.core.management import call_command
    from django.db.models import Count, Max

    from memories.models import Memory, RunMemory

    call_command("seed_demo")
    given = {
        row["memory_id"]: row
        for row in RunMemory.objects.filter(run__project__slug="demo")
        .values("memory_id")
        .annotate(times=Count("id"), last=Max("run__started_at"))
    }
    memories = Memory.objects.filter(project__slug="demo")
    assert any(m.access_count > 10 for m in memories)  # weeks of use
    for memory in memories:
        rows = [given[pk] for pk in [memory.pk, *memory.merged.values_list("pk", flat=True)]
                if pk in given]  # fmt: skip
        assert memory.access_count == sum(row["times"] for row in rows), memory.pk
        if rows:
            assert memory.last_accessed_at == max(row["last"] for row in rows)
