"""The MCP server as a local agent uses it: ``memory-layer-mcp`` on stdio, and the
service's own /mcp, both against the service under gunicorn."""

from __future__ import annotations

import shutil
import sys
import uuid
from pathlib import Path

import httpx2 as httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from memory_layer_client import MemoryLayerClient

COMMAND = shutil.which("memory-layer-mcp", path=str(Path(sys.executable).parent))


@pytest.mark.anyio
async def test_the_stdio_command_reads_its_settings_from_the_environment(service) -> None:
    assert COMMAND, "memory-layer-mcp is installed with the package"
    content = f"Feature flags live in flags.toml ({uuid.uuid4().hex[:6]})"
    params = StdioServerParameters(
        command=COMMAND, env={"MEMORY_LAYER_URL": service.url, "MEMORY_LAYER_KEY": service.key}
    )
    async with Client(params) as client:
        stored = await client.call_tool("remember", {"type": "context", "content": content})
        assert not stored.is_error, stored.content
        recalled = await client.call_tool("recall", {"intent": "where do feature flags live"})
    assert stored.structured_content["id"] in recalled.structured_content["ids"]
    with MemoryLayerClient(service.url, service.key) as memory:
        assert memory.get_memory(stored.structured_content["id"])["content"] == content


@pytest.mark.anyio
async def test_streamable_http_under_gunicorn(service) -> None:
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {service.other_key}"})
    async with http, Client(streamable_http_client(f"{service.url}/mcp", http_client=http)) as c:
        run = await c.call_tool("start_run", {"external_id": f"gunicorn-{uuid.uuid4().hex[:6]}"})
        outcome = await c.call_tool(
            "report_outcome", {"run_id": run.structured_content["id"], "outcome": "failed"}
        )
    assert not outcome.is_error, outcome.content
    assert outcome.structured_content["run"]["status"] == "failed"


def test_the_stdio_command_says_what_it_needs() -> None:
    import subprocess

    done = subprocess.run([COMMAND or "memory-layer-mcp"], capture_output=True, text=True, env={})
    assert done.returncode == 2
    assert "--url" in done.stderr
    assert "--key" in done.stderr
