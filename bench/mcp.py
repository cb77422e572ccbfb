"""What a recall through MCP costs over the same /context call, against gunicorn.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memory_bench \\
        .venv/bin/python bench/mcp.py --size 10000 --requests 300 --rounds 3

Seeds ``bench-<size>`` (bench/seed.py) if it is not there, starts gunicorn with one worker
(the production configuration) and plays one agent on loopback, one request at a time,
alternating the same task as ``POST /api/projects/:id/context`` and as the MCP tool
``recall`` (``POST /mcp``, one JSON-RPC ``tools/call``), cache off (every request
assembles) and on. Three ways to call:

- ``context``: the REST call;
- ``mcp``: the MCP request as any client sends it (stateless Streamable HTTP, JSON answer);
- ``mcp-sdk``: the same through the official SDK's ``Client`` session, whose own work (its
  validation of the answer) is on the agent's side.

Prints medians of each round's p50 and p95 (ms) and the median of the paired differences.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, this file's folder comes first on the path, and this file would be
# imported as the SDK's package ``mcp``: the project's root takes its place.
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
from bench import context as bench_context  # noqa: E402
from bench.seed import areas  # noqa: E402

PORT = bench_context.PORT
PROTOCOL_VERSION = "2025-06-18"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def ensure_seeded(size: int) -> None:
    from memories.models import Project

    if not Project.objects.filter(slug=f"bench-{size}").exists():
        from bench import seed

        seed.main(size)


def tasks(size: int, count: int, repeat: bool) -> list[dict]:
    rng = random.Random(7)
    names = areas(size)
    bodies = []
    for _ in range(count):
        body = json.loads(bench_context.request_body(rng, names, repeat))
        body.pop("responseReserve")
        body["ids"] = True  # as the tool asks: each line names its memory's id
        bodies.append(body)
    return bodies


class Agent:
    """One keep-alive connection, one request at a time."""

    def __init__(self, token: str, slug: str) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
        self.token = token
        self.slug = slug
        self.id = 0

    def post(self, path: str, body: dict, headers: dict[str, str]) -> tuple[float, dict]:
        data = json.dumps(body).encode()
        started = time.perf_counter()
        self.connection.request(
            "POST",
            path,
            body=data,
            headers={
                "Authorization": f"Bearer {self.token}",
                "Content-Type": "application/json",
                **headers,
            },
        )
        response = self.connection.getresponse()
        payload = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status != 200:
            raise RuntimeError(f"{path} answered {response.status}: {payload[:300]!r}")
        return elapsed, json.loads(payload)

    def context(self, task: dict) -> tuple[float, list[int]]:
        elapsed, answer = self.post(f"/api/projects/{self.slug}/context", task, {})
        return elapsed, [item["id"] for item in answer["items"]]

    def recall(self, task: dict) -> tuple[float, list[int]]:
        self.id += 1
        message = {
            "jsonrpc": "2.0",
            "id": self.id,
            "method": "tools/call",
            "params": {
                "name": "recall",
                "arguments": {
                    "intent": task["intent"],
                    "write_scope": task["writeScope"],
                    "budget": task["tokenBudget"],
                },
            },
        }
        headers = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL_VERSION,
        }
        elapsed, answer = self.post("/mcp", message, headers)
        if answer["result"].get("isError"):
            raise RuntimeError(answer["result"]["content"][0]["text"])
        return elapsed, answer["result"]["structuredContent"]["ids"]


def sdk_recalls(token: str, bodies: list[dict]) -> list[float]:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def calls() -> list[float]:
        timings = []
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
        url = f"http://127.0.0.1:{PORT}/mcp"
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            for task in bodies:
                started = time.perf_counter()
                result = await client.call_tool(
                    "recall",
                    {
                        "intent": task["intent"],
                        "write_scope": task["writeScope"],
                        "budget": task["tokenBudget"],
                    },
                )
                timings.append((time.perf_counter() - started) * 1000)
                assert not result.is_error, result.content
        return timings

    return anyio.run(calls)


def measure(size: int, token: str, requests: int, repeat: bool) -> dict[str, float]:
    agent = Agent(token, f"bench-{size}")
    bodies = tasks(size, requests, repeat)
    for task in bodies[:20]:  # warm up: connections, caches, the embedding model
        agent.context(task)
        agent.recall(task)
    rest, mcp, differences = [], [], []
    for index, task in enumerate(bodies):
        # Alternate which goes first, so neither always meets a warmer cache.
        if index % 2:
            (a, ids_a), (b, ids_b) = agent.recall(task), agent.context(task)
            mcp_ms, rest_ms = a, b
        else:
            (b, ids_b), (a, ids_a) = agent.context(task), agent.recall(task)
            mcp_ms, rest_ms = a, b
        if ids_a != ids_b:
            raise RuntimeError(f"recall and /context disagree on {task}: {ids_a} vs {ids_b}")
        rest.append(rest_ms)
        mcp.append(mcp_ms)
        differences.append(mcp_ms - rest_ms)
    sdk = sdk_recalls(token, bodies)
    return {
        "context p50": percentile(rest, 0.5),
        "context p95": percentile(rest, 0.95),
        "mcp p50": percentile(mcp, 0.5),
        "mcp p95": percentile(mcp, 0.95),
        "mcp - context (median of pairs)": statistics.median(differences),
        "mcp-sdk p50": percentile(sdk, 0.5),
        "mcp-sdk p95": percentile(sdk, 0.95),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    if not os.environ.get("DATABASE_URL"):
        sys.exit("Set DATABASE_URL to the benchmark's database (see the docstring).")
    bench_context.django_setup()
    ensure_seeded(arguments.size)
    print(bench_context.database_settings())
    token = bench_context.api_key(arguments.size)
    rows = []
    for cache_seconds, label in ((0, "cache off"), (60, "cache on")):
        server = bench_context.start_server(workers=1, cache_seconds=cache_seconds)
        try:
            rounds = [
                measure(arguments.size, token, arguments.requests, repeat=cache_seconds > 0)
                for _ in range(arguments.rounds)
            ]
        finally:
            bench_context.stop_server(server)
        rows.append((label, {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}))
    names = list(rows[0][1])
    print(f"\n{arguments.size} memories, {arguments.requests} requests x {arguments.rounds}"
          " rounds, one agent, gunicorn with 1 worker; medians of rounds, ms\n")  # fmt: skip
    print("| | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for label, figures in rows:
        print(f"| {label} | " + " | ".join(f"{figures[n]:.1f}" for n in names) + " |")


if __name__ == "__main__":
    main()
