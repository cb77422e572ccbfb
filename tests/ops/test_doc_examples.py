"""Every code block of the README and of docs/ runs in a test, is parsed, or says why not.

What happens to a block follows from its language:

- ``sh``, ``bash``, ``console``: run with bash (``set -eo pipefail``) in a folder of its
  own with the checkout's ``.venv`` and ``manage.py`` at hand, against a live server on the
  demo data (``http://127.0.0.1:8000`` becomes the server's address). ``claude`` is a
  stand-in (tests/ops/claude_stand_in.py) that connects as Claude Code would; a block that
  calls it says so on the line before it. They run once: a second pass meets nothing the
  first left behind (another key, the same roles, the jobs again) and would double the time.
  The README's session with the demo data, which a second pass meets in another state, runs
  twice in tests/ops/test_readme_examples.py, with its answers checked, and not again here.
- ``python``: run with the checkout's interpreter against the same server, with
  ``MEMORY_LAYER_URL`` and ``MEMORY_LAYER_KEY`` set, twice in a row, as a user pasting it
  again would.
- ``json``: parsed.
- ``text``: a figure; the layout's is checked against the folders it names.

A block that cannot run here (it starts a long-lived server, needs Docker, a domain or a
million memories) carries ``<!-- not run: why -->`` on the line before it. It is still read
by ``bash -n``, and the scripts, ``manage.py`` commands, ``make`` targets and options it names
must exist. A block with no language, another language, or a stand-in it does not declare
fails."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

import pytest
from django.core.management import call_command, get_commands
from django.test import override_settings

from memories import services
from memories.models import Project
from tests.mcp.test_mcp import TOOLS
from tests.ops.test_readme_examples import SESSION
from tests.support import ROOT, database_url

SHELL = {"sh", "bash", "console"}
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"<!--\s*(not run|run with a stand-in for claude):?\s*(.*?)\s*-->")
SERVICE = "http://127.0.0.1:8000"
# Commands that serve until stopped, need Docker, or run for minutes: never run here.
LONG_LIVED = re.compile(
    r"^\s*make (run|test)\b|\bdocker\b|config/start-web|-m celery\b|manage\.py (serve|runserver)"
    r"|\bbench/",
    re.M,
)
STAND_IN = Path(__file__).with_name("claude_stand_in.py")


@dataclass(frozen=True)
class Block:
    page: str  # relative to the checkout
    line: int  # of the opening fence
    language: str
    code: str
    not_run: str | None  # why, when the block is marked as not run
    stand_in: bool  # marked as running with the claude stand-in

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def read_blocks(path: Path) -> list[Block]:
    """The fenced blocks of a page, each with the marker on the line before it, if any."""
    blocks: list[Block] = []
    lines = path.read_text().splitlines()
    number = 0
    while number < len(lines):
        fence = re.match(r"^```(.*)$", lines[number])
        if not fence:
            number += 1
            continue
        end = next(i for i in range(number + 1, len(lines)) if lines[i].startswith("```"))
        before = lines[number - 1] if number else ""
        marker = MARKER.fullmatch(before.strip())
        blocks.append(
            Block(
                page=str(path.relative_to(ROOT)),
                line=number + 1,
                language=fence.group(1).strip(),
                code="\n".join(lines[number + 1 : end]) + "\n",
                not_run=marker.group(2) if marker and marker.group(1) == "not run" else None,
                stand_in=bool(marker and marker.group(1) != "not run"),
            )
        )
        number = end + 1
    return blocks


BLOCKS = [block for page in PAGES for block in read_blocks(page)]
SESSION_BLOCK = next(b for b in BLOCKS if SESSION and b.code == SESSION.group(1))


def runnable(language: set[str]) -> list[Block]:
    return [
        b for b in BLOCKS if b.language in language and b.not_run is None and b is not SESSION_BLOCK
    ]


def name_of(block: Block) -> str:
    return block.name


# --- what every block is --------------------------------------------------------------------


def test_every_block_is_run_parsed_or_marked_with_a_reason():
    assert SESSION_BLOCK.page == "README.md"
    assert SESSION_BLOCK.language == "sh"
    for block in BLOCKS:
        assert block.language in SHELL | {"python", "json", "text"}, (
            f"{block.name}: give the block a language this test knows"
            " (sh, bash, console, python, json, text), or add its kind here"
        )
        if block.not_run is not None:
            assert block.language in SHELL | {"python"}, f"{block.name}: only code is run"
            assert len(block.not_run) > 10, f"{block.name}: say why the block is not run"
        if block.language in SHELL and block.not_run is None:
            assert not LONG_LIVED.search(block.code), (
                f"{block.name}: this block serves until stopped or runs for minutes: mark it"
                " <!-- not run: why --> on the line before it"
            )
        calls_claude = bool(re.search(r"^\s*claude\b", block.code, re.M))
        assert calls_claude == block.stand_in, (
            f"{block.name}: a block that calls claude runs with a stand-in and says so"
            " (<!-- run with a stand-in for claude: ... -->), and no other block does"
        )


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.not_run is not None and b.language in SHELL], ids=name_of
)
def test_a_block_not_run_still_parses_and_names_what_exists(block):
    checked = subprocess.run(["bash", "-n"], input=block.code, capture_output=True, text=True)
    assert checked.returncode == 0, f"{block.name}: {checked.stderr}"
    commands = get_commands()
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))
    for command in _commands(block.code):
        words = shlex.split(command, comments=True)
        words = [w for w in words if not re.fullmatch(r"[A-Z_]+=.*", w)]  # VAR=value prefixes
        for index, word in enumerate(words):
            if re.fullmatch(r"(bench|config|\.ci)/[\w./-]+|[\w.-]+\.example", word):
                assert (ROOT / word).exists(), f"{block.name}: {word} is not in the checkout"
            if word.endswith(".py") and word.startswith("bench/"):
                _options_exist(block, ROOT / word, words[index + 1 :])
            if word == "manage.py":
                name = words[index + 1]
                assert name in commands, f"{block.name}: no manage.py command {name}"
                if not commands[name].startswith("django."):
                    module = import_module(f"{commands[name]}.management.commands.{name}")
                    _options_exist(block, Path(str(module.__file__)), words[index + 2 :])
        if words[:1] == ["make"]:
            for target in words[1:]:
                if "=" not in target:
                    assert target in targets, f"{block.name}: no make target {target}"


def _commands(code: str) -> list[str]:
    """The block's commands, one per line once continuation lines are joined."""
    joined = code.replace("\\\n", " ")
    return [line for line in joined.splitlines() if line.strip() and not line.startswith("#")]


def _options_exist(block: Block, script: Path, words: list[str]) -> None:
    source = script.read_text()
    for word in words:
        option = word.split("=", 1)[0]
        if option.startswith("--"):
            assert f'"{option}' in source, f"{block.name}: {script.name} has no {option}"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.language == "json"], ids=name_of)
def test_json_blocks_parse(block):
    json.loads(block.code)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.language == "text"], ids=name_of)
def test_figures_name_what_exists(block):
    """The layout's figure: each line names layers (``a  |  b``), then what they hold."""
    assert block.page == "docs/layout.md", f"{block.name}: a figure this test cannot check"
    for line in block.code.splitlines():
        names = re.match(r"^(\w+(?:\s+\|\s+\w+)*)\s{2,}", line)
        assert names, f"{block.name}: {line!r} names no layer"
        for name in re.split(r"\s+\|\s+", names.group(1)):
            assert (ROOT / name).is_dir(), f"{block.name}: no folder {name}"


# --- running them ---------------------------------------------------------------------------


@pytest.fixture
def demo(live_server, tmp_path, settings):
    """The demo data behind a live server, and a folder with the checkout's venv and
    manage.py at hand, as in the checkout. Yields the environment a block runs with."""
    settings.API_THROTTLE_RATE = "100000/min"
    with override_settings(DEBUG=True):  # as under `make run`: the published passwords
        call_command("seed_demo", verbosity=0)
    for name in (".venv", "manage.py"):
        (tmp_path / name).symlink_to(ROOT / name)
    stand_ins = tmp_path / "stand-ins"
    stand_ins.mkdir()
    claude = stand_ins / "claude"
    claude.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STAND_IN}" "$@"\n')
    claude.chmod(0o755)
    _, key = services.api_key_create(project=Project.objects.get(slug="demo"), name="docs")
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "PATH": f"{stand_ins}{os.pathsep}{os.environ['PATH']}",
        "MEMORY_LAYER_URL": live_server.url,
        "MEMORY_LAYER_KEY": key,
    }
    env.pop("PYTEST_CURRENT_TEST", None)
    return env


def _run(command: list[str], block: Block, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"{block.name} failed:\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, f"{block.name}:\n{done.stderr}"
    assert '{"error"' not in done.stdout, f"{block.name}:\n{done.stdout}"
    return done.stdout


@pytest.mark.parametrize("block", runnable(SHELL), ids=name_of)
def test_shell_block_runs(block, demo, live_server, tmp_path):
    script = "set -eo pipefail\n" + block.code.replace(SERVICE, live_server.url)
    output = _run(["bash", "-c", script], block, tmp_path, demo)
    if block.stand_in:  # Claude Code would find every tool, whichever way it connects
        every = f", {len(TOOLS)} tools: {', '.join(sorted(TOOLS))}"
        assert output.count(every) == block.code.count("claude mcp add"), output


@pytest.mark.parametrize("block", runnable({"python"}), ids=name_of)
def test_python_block_runs(block, demo, live_server, tmp_path):
    example = tmp_path / "example.py"
    example.write_text(block.code.replace(SERVICE, live_server.url))
    for _ in range(2):
        _run([sys.executable, str(example)], block, tmp_path, demo)
