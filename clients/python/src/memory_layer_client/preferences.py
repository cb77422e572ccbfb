"""The endpoints of users' preferences (``Endpoints`` inherits them): set, read, list,
delete and the history of one, and all of one user's data deleted in one call."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar
from urllib.parse import quote

from memory_layer_client.transport import Call, encode_query
from memory_layer_client.types import Erased, Preference, PreferenceEvent, Preferences

T = TypeVar("T")


def _segment(value: str) -> str:
    return quote(str(value), safe="")


class PreferenceEndpoints:
    def _send(self, call: Call[T]) -> Awaitable[T]:
        raise NotImplementedError

    async def _project_path(self) -> str:
        raise NotImplementedError

    async def _user_path(self, user_id: str) -> str:
        return f"{await self._project_path()}/users/{_segment(user_id)}"

    async def set_preference(
        self, user_id: str, key: str, value: Any, *, category: str | None = None
    ) -> Preference:
        """Set one of a user's preferences in this project (any JSON value); a category left
        out keeps the one it had."""
        body: dict[str, Any] = {"value": value}
        if category is not None:
            body["category"] = category
        path = f"{await self._user_path(user_id)}/preferences/{_segment(key)}"
        return await self._send(Call[Preference]("PUT", path, json=body))

    async def get_preference(self, user_id: str, key: str) -> Preference:
        """One preference in force for the user here (the project's, else one for every
        project); NotFound when there is none."""
        path = f"{await self._user_path(user_id)}/preferences/{_segment(key)}"
        return await self._send(Call[Preference]("GET", path))

    async def get_preferences(self, user_id: str, *, category: str | None = None) -> Preferences:
        """Every preference in force for the user here, by key (optionally one category)."""
        path = f"{await self._user_path(user_id)}/preferences"
        params = encode_query({"category": category})
        return await self._send(Call[Preferences]("GET", path, params=params))

    async def delete_preference(self, user_id: str, key: str) -> None:
        path = f"{await self._user_path(user_id)}/preferences/{_segment(key)}"
        await self._send(Call[None]("DELETE", path, ok=(204,)))

    async def preference_history(self, user_id: str, key: str) -> list[PreferenceEvent]:
        """Every change to one of the user's preferences, newest first, and who made it."""
        path = f"{await self._user_path(user_id)}/preferences/{_segment(key)}/history"
        return await self._send(Call[list[PreferenceEvent]]("GET", path))

    async def forget_user(self, user_id: str) -> Erased:
        """Delete all of a user's data in this project (preferences, their history,
        conversations); how much was deleted."""
        return await self._send(Call[Erased]("DELETE", await self._user_path(user_id)))

    async def propose_global_preference(
        self, user_id: str, key: str, value: Any, *, category: str | None = None
    ) -> Preference:
        """Propose a preference for every project: in force once a reviewer approves it."""
        body: dict[str, Any] = {"userId": user_id, "key": key, "value": value}
        if category is not None:
            body["category"] = category
        return await self._send(Call[Preference]("POST", "/api/preferences/global", json=body))
