"""The README's examples run as written, against the live service."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)


@pytest.mark.anyio
async def test_the_ten_line_agent_loop_runs(service, monkeypatch) -> None:
    loop = BLOCKS[0]
    assert len([line for line in loop.strip().splitlines() if line.strip()]) <= 12
    monkeypatch.setenv("MEMORY_LAYER_URL", service.url)
    monkeypatch.setenv("MEMORY_LAYER_KEY", service.key)
    namespace: dict = {}
    exec(compile(loop, "README.md", "exec"), namespace)
    prompts: list[str] = []

    def call_model(prompt: str, task: str) -> tuple[str, str, bool]:
        prompts.append(prompt)
        return "done", "Login throttling lives in src/auth/throttle.py.", True

    await namespace["main"]("Fix the login throttling", call_model)
    assert prompts
    from memory_layer_client import AsyncMemoryLayerClient

    async with AsyncMemoryLayerClient(service.url, service.key) as client:
        page = await client.list_memories(q="throttling")
    assert any(m["content"].startswith("Login throttling lives") for m in page["memories"])


def test_the_rest_example_runs(service, capsys) -> None:
    code = BLOCKS[1].replace('"http://127.0.0.1:8000", api_key', "service.url, service.key")
    exec(compile(code, "README.md", "exec"), {"service": service})
    assert "visible character" in capsys.readouterr().out
