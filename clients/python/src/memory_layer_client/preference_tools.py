"""The MCP tools of users' preferences: read what a user prefers, set one preference
(memory_layer_client.tools registers them like the others)."""

import json
from typing import Annotated, Any

from mcp_types import CallToolResult
from pydantic import Field, JsonValue

from memory_layer_client.client import AsyncMemoryLayerClient
from memory_layer_client.results import answer
from memory_layer_client.types import Preference

UserId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.@:+-]*$",
        description="The user, as your system names them, e.g. 'u-1842' or 'ana@example.com'.",
    ),
]


def preference_line(preference: Preference) -> str:
    value = preference["value"]
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    where = "every project" if preference["scope"] == "global" else "this project"
    category = f", {preference['category']}" if preference["category"] else ""
    return f"- {preference['key']}: {shown} ({where}{category})"


async def get_preferences(
    client: AsyncMemoryLayerClient,
    user_id: UserId,
    category: Annotated[
        str | None, Field(max_length=100, description="Only this category, e.g. 'style'.")
    ] = None,
) -> CallToolResult:
    """What a user prefers here: each preference's key and value, the project's own first,
    then those approved for every project. recall(user_id=...) puts them in the context
    too."""
    found = await client.get_preferences(user_id, category=category)
    lines = [preference_line(p) for p in found["preferences"]]
    text = "\n".join(lines) if lines else f"No preference of {user_id} here."
    return answer(text, dict(found))


async def set_preference(
    client: AsyncMemoryLayerClient,
    user_id: UserId,
    key: Annotated[
        str,
        Field(
            min_length=1,
            max_length=200,
            pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$",
            description="What the preference is about, e.g. 'language' or 'answer.length'.",
        ),
    ],
    value: Annotated[
        JsonValue,
        Field(description="Any JSON: 'de', 3, true, ['pytest'], {'tone': 'short'}."),
    ],
    category: Annotated[
        str | None,
        Field(max_length=100, description="Groups preferences, e.g. 'style' or 'tools'."),
    ] = None,
) -> CallToolResult:
    """Remember what a user prefers in this project (set again to change it). Only set
    what the user said or clearly showed; every change is kept in the preference's
    history."""
    preference: Any = await client.set_preference(user_id, key, value, category=category)
    return answer(f"Set {preference_line(preference)[2:]}", dict(preference))
