"""A user's preferences through the client, against the real service: set, read, list by
category, history, the context that names the user, deletion, and another project's key
that reads none of them."""

from __future__ import annotations

import uuid

import pytest
from memory_layer_client import AsyncMemoryLayerClient, BadRequest, MemoryLayerClient, NotFound


def a_user() -> str:
    return f"user-{uuid.uuid4().hex[:8]}@example.com"


def test_a_users_preferences_through_the_sync_client(service) -> None:
    user = a_user()
    with MemoryLayerClient(service.url, service.key) as memory:
        created = memory.set_preference(user, "language", "de", category="style")
        assert (created["value"], created["scope"], created["category"]) == (
            "de", "project", "style",
        )  # fmt: skip
        memory.set_preference(user, "editor", {"name": "vim", "tabs": False}, category="tools")
        memory.set_preference(user, "language", "fr")  # the category stays
        assert memory.get_preference(user, "language")["category"] == "style"
        styles = memory.get_preferences(user, category="style")["preferences"]
        assert [(p["key"], p["value"]) for p in styles] == [("language", "fr")]
        history = memory.preference_history(user, "language")
        assert [e["changes"]["value"] for e in history] == [["de", "fr"], [None, "de"]]
        context = memory.context(200, intent="answer the user", user_id=user)
        assert context["text"].startswith(
            '## Preferences\n- editor: {"name": "vim", "tabs": false}\n- language: fr'
        )
        assert [p["key"] for p in context["preferences"]] == ["editor", "language"]
        with pytest.raises(BadRequest) as refused:
            memory.set_preference("two words", "language", "de")
        assert "letters, digits and . _ : @ + -" in str(refused.value)
        memory.delete_preference(user, "editor")
        with pytest.raises(NotFound):
            memory.get_preference(user, "editor")
    with MemoryLayerClient(service.url, service.other_key) as beta:
        assert beta.get_preferences(user)["preferences"] == []  # its own user of that name
    with MemoryLayerClient(service.url, service.key) as memory:
        erased = memory.forget_user(user)
        assert (erased["preferences"], erased["userId"]) == (1, user)
        assert memory.get_preferences(user)["preferences"] == []


@pytest.mark.anyio
async def test_a_users_preferences_through_the_async_client(service) -> None:
    user = a_user()
    async with AsyncMemoryLayerClient(service.url, service.key) as memory:
        await memory.set_preference(user, "tone", "short")
        assert (await memory.get_preference(user, "tone"))["value"] == "short"
        proposed = await memory.propose_global_preference(user, "timezone", "Europe/Berlin")
        assert proposed["status"] == "pending"
