"""The container recipe. Docker does not run on these machines, so the image is never built
here; these checks keep it from growing steps of its own: the web container starts with
config/start-web, the script the production browser test runs (tests/browser/
test_production.py), and the worker and beat run the same image."""

from __future__ import annotations

import os
import re

import yaml

from tests.support import ROOT

START = "config/start-web"


def _instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions (continuation lines joined), as (NAME, arguments)."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1])
        for line in lines
        if line and not line.startswith("#")
    ]


def test_the_image_runs_as_a_user_collects_static_files_and_starts_with_the_start_script():
    instructions = _instructions()
    assert instructions[-1] == ("CMD", f'["{START}"]')
    users = [(index, who) for index, (name, who) in enumerate(instructions) if name == "USER"]
    assert users, "the image runs as root"
    last_user, who = users[-1]
    assert who not in {"root", "0"}
    assert any(
        name == "RUN" and "manage.py collectstatic" in arguments
        for name, arguments in instructions[last_user:]
    ), "the static files are collected at build time, as the service's user"
    assert os.access(ROOT / START, os.X_OK)
    script = (ROOT / START).read_text()
    for step in (
        "manage.py collectstatic",
        "manage.py migrate",
        "gunicorn -c config/gunicorn.conf.py",
    ):
        assert step in script


def test_compose_runs_web_worker_and_beat_from_the_image_beside_postgresql_and_redis():
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    assert set(services) == {"postgres", "redis", "web", "worker", "beat"}
    app = {name: services[name] for name in ("web", "worker", "beat")}
    for name, service in app.items():
        assert service["build"] == ".", name
        assert service["env_file"] == ".env", name
        assert service["environment"]["DATABASE_URL"].endswith("@postgres:5432/memory"), name
        assert service["environment"]["CELERY_BROKER_URL"].startswith("redis://redis:"), name
    assert "command" not in app["web"], "the web container runs the image's command, start-web"
    assert app["worker"]["command"][:5] == ["python3", "-m", "celery", "-A", "config"]
    assert app["worker"]["command"][5] == "worker"
    assert app["beat"]["command"][5] == "beat"
