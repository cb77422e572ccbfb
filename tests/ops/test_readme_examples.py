"""The README's session with the demo data runs as pasted, twice in a row against the same
server, as a newcomer trying it again would (only the server's address is the test's)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings

from tests.support import database_url

pytestmark = pytest.mark.django_db(transaction=True)

README = (settings.BASE_DIR / "README.md").read_text()
SESSION = re.search(r"A session with the demo data.*?```sh\n(.*?)```", README, re.S)


def test_the_demo_session_runs_twice_as_pasted(live_server, tmp_path, settings):
    settings.API_THROTTLE_RATE = "100000/min"
    assert SESSION, "the README's session with the demo data is gone"
    with override_settings(DEBUG=True):  # as under `make run`: the published passwords
        call_command("seed_demo", verbosity=0)
    # The session writes its files where it runs: a folder of its own, with the checkout's
    # venv and manage.py at hand as in the checkout.
    for name in (".venv", "manage.py"):
        (tmp_path / name).symlink_to(settings.BASE_DIR / name)
    script = SESSION.group(1).replace("http://127.0.0.1:8000", live_server.url)
    env = {**os.environ, "DATABASE_URL": database_url()}
    env.pop("PYTEST_CURRENT_TEST", None)
    outputs = []
    for _ in range(2):
        done = subprocess.run(
            [shutil.which("bash") or "bash", "-c", script],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        outputs.append(done.stdout)
    for output in outputs:
        assert '"reviewStatus":"pending"' in output  # stored, waiting for review
        assert '"reviewStatus":"approved"' in output  # the reviewer approved it
        assert "Approval and rejection are human acts" in output  # the key may not
        assert output.count('"error"') == 1, output  # and nothing else went wrong
        assert '"kind": ' in output  # the second write names a pair it found
        assert '"supersededBy":' in output
        assert '"status":"resolved"' in output
        assert '"text":"## Memories\\n' in output  # the context, within its budget
    assert '"kind": "conflict"' in outputs[0]  # 10 s against 30 s
    # Again: the first pass's learnings are there, so "10 seconds" now repeats one of them.
    assert '"kind": "repeat"' in outputs[1]
