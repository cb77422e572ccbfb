"""Who made a change: a signed-in user, an API key, or a system job."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


@dataclass(frozen=True)
class Actor:
    label: str
    user: AbstractBaseUser | None = None

    @classmethod
    def for_user(cls, user: AbstractBaseUser) -> Actor:
        return cls(label=f"user:{user.get_username()}", user=user)

    @classmethod
    def system(cls, job: str) -> Actor:
        return cls(label=f"system:{job}")

    @property
    def is_human(self) -> bool:
        return self.user is not None

    def can_review(self) -> bool:
        return self.user is not None and self.user.has_perm("memories.review_memory")
