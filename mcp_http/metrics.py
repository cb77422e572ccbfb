"""Calls of the MCP tools, by tool name: how many, how they ended, how long they took."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from assembly.metrics import FAST_BUCKETS

TOOL_CALLS = Counter(
    "mcp_tool_calls", "MCP tool calls, by tool and outcome (ok or error).", ["tool", "outcome"]
)
TOOL_SECONDS = Histogram(
    "mcp_tool_duration_seconds",
    "Time to answer an MCP tool call, by tool.",
    ["tool"],
    buckets=FAST_BUCKETS,
)


def observe(tool: str, seconds: float, outcome: str) -> None:
    TOOL_CALLS.labels(tool, outcome).inc()
    TOOL_SECONDS.labels(tool).observe(seconds)
