"""A run's whole lifecycle through ProjectMemoryLayer against the live service: the run
starts, a memory is stored and recalled, the outcome moves its confidence."""

from __future__ import annotations

import uuid

import pytest
from memory_layer_client import (
    AsyncMemoryLayerClient,
    HistoryWindow,
    LayerStack,
    ProjectMemoryLayer,
)


@pytest.mark.anyio
@pytest.mark.parametrize(("outcome", "moves"), [("succeeded", 1), ("failed", -1)])
async def test_the_lifecycle_moves_confidence(service, outcome: str, moves: int) -> None:
    tag = f"src/billing/{uuid.uuid4().hex[:6]}/**"
    memory = ProjectMemoryLayer(
        url=service.url,
        api_key=service.key,
        external_id=f"lifecycle-{uuid.uuid4().hex[:8]}",
        write_scope=[tag.replace("**", "invoice.py")],
        slot=1,
        budget=400,
    )
    history = HistoryWindow(cap=60, slot=0)
    stack = LayerStack([memory, history])
    await stack.init()
    assert memory.run_id is not None
    stored = await stack.store(
        "project-memory", "warning", "Invoices are rounded half-even, never half-up.", tags=[tag]
    )
    await stack.store("history", "user", "Fix the rounding of invoice totals.")
    view = await stack.recall("rounding of invoice totals", 600)
    assert "- [warning] Invoices are rounded half-even, never half-up." in view.text
    assert view.text.startswith("user: Fix the rounding")  # slot 0 first
    await stack.complete(outcome)
    await stack.dispose()
    async with AsyncMemoryLayerClient(service.url, service.key) as client:
        after = await client.get_memory(stored["id"])
        run = await client.get_run(memory.run_id)
    assert run["status"] == outcome
    assert run["given"][0]["memoryId"] == stored["id"]  # given first: it matches the scope
    assert (after["confidence"] - stored["confidence"]) * moves > 0
    assert not stack.diagnostics
