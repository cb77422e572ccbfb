"""The MCP tool ``related``: what the project's memories connect to a name or a memory."""

from __future__ import annotations

from typing import Any

import pytest

from knowledge.models import EntityTerm
from memories import services
from tests.factories import MemoryFactory, ProjectFactory
from tests.mcp.test_mcp import SESSIONS, run

pytestmark = pytest.mark.django_db(transaction=True)

RETRY = [
    "RetryQueue in src/billing/queue.py retries Stripe webhooks",
    "src/billing/tasks.py enqueues into RetryQueue",
    "RetryQueue drops Stripe events after 5 attempts (src/billing/retry.py)",
]


def test_related_by_name_and_by_memory(live_server, alpha):
    project, key = alpha
    other = ProjectFactory(slug="beta")
    services.api_key_create(project=other, name="agent")
    EntityTerm.objects.create(project=project, name="Stripe")
    memories = [MemoryFactory(project=project, content=content) for content in RETRY]
    MemoryFactory(project=other, content="SecretThing lives in src/secret.py")

    async def scenario() -> dict[str, Any]:
        async with SESSIONS["http"](live_server.url, key) as client:
            return {
                "name": await client.call_tool("related", {"name": "retryqueue"}),
                "memory": await client.call_tool("related", {"memory_id": memories[1].pk}),
                "deep": await client.call_tool("related", {"name": "Stripe", "depth": 2}),
                "both": await client.call_tool("related", {"name": "x", "memory_id": 1}),
                "neither": await client.call_tool("related", {}),
                "depth": await client.call_tool("related", {"name": "Stripe", "depth": 4}),
                "unknown": await client.call_tool("related", {"name": "NoSuchName"}),
                "theirs": await client.call_tool("related", {"name": "SecretThing"}),
            }

    seen = run(scenario)

    by_name = seen["name"]
    assert not by_name.is_error, by_name.content
    entity = by_name.structured_content["entities"][0]
    assert entity["name"] == "RetryQueue"
    weights = {n["name"]: (n["weight"], n["type"]) for n in entity["neighbours"]}
    assert weights["Stripe"] == (2, "mentions")
    assert weights["src/billing/queue.py"] == (1, "defined_in")
    text = by_name.content[0].text
    assert "Stripe (term): mentions, weight 2" in text
    assert f"#{memories[0].pk} [pattern] {RETRY[0]}" in text

    by_memory = seen["memory"].structured_content["entities"]
    assert {e["name"] for e in by_memory} == {"RetryQueue", "src/billing/tasks.py"}
    deep = seen["deep"].structured_content["entities"][0]["neighbours"]
    assert {n["depth"] for n in deep} == {1, 2}

    for name in ("both", "neither"):
        assert seen[name].is_error
        assert "Give either `name`" in seen[name].content[0].text
    assert "`depth` must be at most 3 (got 4)" in seen["depth"].content[0].text
    for name in ("unknown", "theirs"):  # another project's names do not exist for this key
        assert seen[name].is_error
        assert "No memory of this project mentions a name like" in seen[name].content[0].text
