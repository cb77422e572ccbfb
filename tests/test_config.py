from __future__ import annotations

import pytest

from config.celery import app
from config.env import env_bool, env_list, load_env_file


def test_env_bool_accepts_the_usual_spellings_and_refuses_others(monkeypatch):
    monkeypatch.setenv("FLAG", "Yes")
    assert env_bool("FLAG") is True
    monkeypatch.setenv("FLAG", "off")
    assert env_bool("FLAG", default=True) is False
    monkeypatch.setenv("FLAG", "maybe")
    with pytest.raises(ValueError, match="FLAG='maybe' is not a boolean"):
        env_bool("FLAG")


def test_env_list_splits_on_commas(monkeypatch):
    monkeypatch.setenv("HOSTS", "a.example, b.example,,")
    assert env_list("HOSTS", []) == ["a.example", "b.example"]


def test_env_file_does_not_override_the_environment(tmp_path, monkeypatch):
    env_file = tmp_path / ".env"
    env_file.write_text("# comment\nA_SETTING=from-file  # note\nexport B_SETTING='quoted'\n")
    monkeypatch.setenv("A_SETTING", "from-env")
    monkeypatch.delenv("B_SETTING", raising=False)
    load_env_file(env_file)
    import os

    assert os.environ["A_SETTING"] == "from-env"
    assert os.environ["B_SETTING"] == "quoted"
    monkeypatch.delenv("B_SETTING")


def test_celery_reads_django_settings():
    assert app.conf.task_serializer == "json"
    assert app.conf.beat_scheduler == "django_celery_beat.schedulers:DatabaseScheduler"
    assert app.conf.broker_url


def test_the_file_system_broker_keeps_everything_under_var(tmp_path):
    """With no broker configured, a message sent leaves its queue and its exchange table
    under VAR_DIR, nothing in the working directory (kombu's default "control" folder)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "VAR_DIR": str(tmp_path / "var"), "PYTHONPATH": str(root)}
    env.pop("CELERY_BROKER_URL", None)
    script = (
        "import django; django.setup()\n"
        "from config.celery import app\n"
        "app.send_task('policies.update_tiers')\n"
    )
    subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings"},
        check=True,
        timeout=60,
    )
    assert list((tmp_path / "var" / "broker" / "control").glob("*.exchange"))
    assert list((tmp_path / "var" / "broker" / "queue").glob("*.msg"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["var"]
