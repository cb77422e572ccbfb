"""The README's examples run as written, against the live service."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)


@pytest.mark.anyio
async def test_the_ten_line_agent_loop_runs_as_pasted_twice(service, monkeypatch) -> None:
    """Run twice in a row against the same service, as a user pasting it again would."""
    loop = BLOCKS[0]
    assert len([line for line in loop.strip().splitlines() if line.strip()]) <= 12
    monkeypatch.setenv("MEMORY_LAYER_URL", service.url)
    monkeypatch.setenv("MEMORY_LAYER_KEY", service.key)
    prompts: list[str] = []

    def call_model(prompt: str, task: str) -> tuple[str, str, bool]:
        prompts.append(prompt)
        return "done", f"Login throttling lives in src/auth/throttle.py ({len(prompts)}).", True

    for _ in range(2):
        namespace: dict = {}
        exec(compile(loop, "README.md", "exec"), namespace)
        await namespace["main"]("Fix the login throttling", call_model)
    assert len(prompts) == 2
    from memory_layer_client import AsyncMemoryLayerClient

    async with AsyncMemoryLayerClient(service.url, service.key) as client:
        page = await client.list_memories(q="throttling")
    learned = {m["content"]: m["sourceRunId"] for m in page["memories"]}
    runs = [learned[f"Login throttling lives in src/auth/throttle.py ({i})."] for i in (1, 2)]
    assert runs[0] != runs[1]  # each pass is a run of its own, not the first one's again


def test_the_rest_example_runs_as_pasted_twice(service, monkeypatch, capsys) -> None:
    monkeypatch.setenv("MEMORY_LAYER_URL", service.url)
    monkeypatch.setenv("MEMORY_LAYER_KEY", service.key)
    for _ in range(2):
        exec(compile(BLOCKS[1], "README.md", "exec"), {})
    assert capsys.readouterr().out.count("Fix these fields") == 2  # once per run
