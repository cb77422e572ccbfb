from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from knowledge.models import MemoryPair
from mcp_http import exchange
from memories import services
from tests.factories import MemoryFactory, ProjectFactory
from tests.support import require

SDK = "@modelcontextprotocol/sdk"
SDK_MAJOR = "1"
NPM_INSTALL = ["--no-save", "--no-audit", "--no-fund"]  # nothing written outside var/node
NODE_DIR = Path(__file__).resolve().parents[2] / "var" / "node"


@pytest.fixture(autouse=True)
def _mcp_threads_let_go_of_the_database():
    """The threads that answer MCP requests hold database connections of their own: they
    end with each test, so the test database can be dropped."""
    yield
    exchange.loops.close()


@pytest.fixture(autouse=True)
def _generous_limits(settings):
    settings.API_THROTTLE_RATE = "100000/min"


@pytest.fixture
def alpha():
    """A project and an agent's key for it."""
    project = ProjectFactory(slug="alpha")
    _, key = services.api_key_create(project=project, name="agent")
    return project, key


@pytest.fixture
def rest_of_the_api(alpha):
    """In alpha: a memory about src/cache/ (for changed files), and an open conflict pair of
    two memories (first the lower id): ``(cached, pair, first, second)``."""
    project, _ = alpha
    cached = MemoryFactory(
        project=project, content="Cache reads go through Redis.", tags=["src/cache/**"]
    )
    tuesday = MemoryFactory(project=project, content="Deploy on Tuesdays only.", tags=["deploy"])
    friday = MemoryFactory(project=project, content="Deploy on Fridays only.", tags=["deploy"])
    first, second = sorted([tuesday, friday], key=lambda m: m.pk)
    # Found as they were written (another day of the week), or made here.
    pair, _ = MemoryPair.objects.get_or_create(
        first_id=first.pk,
        second_id=second.pk,
        defaults={
            "project": project,
            "kind": "conflict",
            "similarity": 0.9,
            "evidence": {},
            "first_hash": first.content_hash,
            "second_hash": second.content_hash,
            "found_by": "tests",
        },
    )
    return cached, pair, first, second


def _installed_major() -> str | None:
    manifest = NODE_DIR / "node_modules" / SDK / "package.json"
    if not manifest.exists():
        return None
    return str(json.loads(manifest.read_text())["version"]).split(".")[0]


@pytest.fixture(scope="session")
def typescript_sdk() -> tuple[str, Path]:
    """The official TypeScript MCP SDK, installed once with npm into var/node (git-ignored):
    node, and the folder a script must sit in for its imports to resolve. Without node and
    npm the test is skipped, unless CI is set: CI must run it."""
    node, npm = shutil.which("node"), shutil.which("npm")
    missing = "node and npm are needed to test the MCP server with the TypeScript SDK"
    require(bool(node and npm), missing, strict=bool(os.environ.get("CI")))
    assert node
    assert npm
    if _installed_major() != SDK_MAJOR:
        NODE_DIR.mkdir(parents=True, exist_ok=True)
        installed = subprocess.run(
            [npm, "install", *NPM_INSTALL, "--prefix", str(NODE_DIR), f"{SDK}@^{SDK_MAJOR}"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert installed.returncode == 0, f"npm install failed:\n{installed.stderr}"
        assert _installed_major() == SDK_MAJOR
    return node, NODE_DIR
