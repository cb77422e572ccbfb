"""Who made a change: a signed-in user, an API key, or a system job."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

    from memories.models import ApiKey


@dataclass(frozen=True)
class Actor:
    label: str
    user: User | None = None
    api_key: ApiKey | None = None

    @classmethod
    def for_user(cls, user: User | AnonymousUser) -> Actor:
        if not user.is_authenticated:
            raise PermissionDenied("Sign in first.")
        return cls(label=f"user:{user.get_username()}", user=user)

    @classmethod
    def for_api_key(cls, api_key: ApiKey) -> Actor:
        return cls(label=f"api-key:{api_key.name}", api_key=api_key)

    @classmethod
    def system(cls, job: str) -> Actor:
        return cls(label=f"system:{job}")

    @property
    def is_human(self) -> bool:
        return self.user is not None

    def can_review(self, project_id: int | None) -> bool:
        """Whether the actor is a reviewer of the project (None: of global memories)."""
        from memories import roles
        from memories.models import Role

        return self.user is not None and roles.may(self.user, project_id, Role.REVIEWER)

    def event_fields(self) -> dict[str, object]:
        """The actor columns of a MemoryEvent."""
        return {"actor_user": self.user, "actor_api_key": self.api_key, "actor_label": self.label}
