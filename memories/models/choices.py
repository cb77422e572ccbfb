"""The store's enumerations and the rules shared by its models."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

# The database's bound on content; the configurable limit (MEMORY_CONTENT_MAX_CHARS) is lower.
CONTENT_HARD_LIMIT = 20000
UNIT_INTERVAL = [MinValueValidator(0.0), MaxValueValidator(1.0)]


# Default expiry in days by memory type (None: never expires); a project's policy overrides.
DEFAULT_EXPIRY_DAYS = {"pattern": None, "warning": 90, "learning": 180, "context": 30}


def in_choices(field: str, choices: type[models.TextChoices]) -> Q:
    return Q(**{f"{field}__in": choices.values})


def between_0_and_1(field: str) -> Q:
    return Q(**{f"{field}__gte": 0.0, f"{field}__lte": 1.0})


class MemoryType(models.TextChoices):
    PATTERN = "pattern"
    WARNING = "warning"
    LEARNING = "learning"
    CONTEXT = "context"


class Source(models.TextChoices):
    HUMAN = "human"
    RUN = "run"
    LEARNING = "learning"


class Scope(models.TextChoices):
    GLOBAL = "global"
    PROJECT = "project"
    RUN = "run"


class Tier(models.TextChoices):
    HOT = "hot"
    WARM = "warm"
    COLD = "cold"
    FROZEN = "frozen"


class ReviewStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


# What waits for a human: memories no reviewer has judged yet (active ones, and proposed
# global ones, which only an approval activates), and those a code change flagged stale (an
# approval settles both).
NEEDS_REVIEW = Q(review_status=ReviewStatus.PENDING) & (
    Q(active=True) | Q(scope=Scope.GLOBAL, archived_at__isnull=True)
) | Q(active=True, stale_at__isnull=False)


class RunStatus(models.TextChoices):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class Outcome(models.TextChoices):
    """What an agent reports at the end of a run."""

    SUCCEEDED = RunStatus.SUCCEEDED.value
    FAILED = RunStatus.FAILED.value


class EventAction(models.TextChoices):
    CREATED = "created"
    UPDATED = "updated"
    APPROVED = "approved"
    REJECTED = "rejected"
    ACTIVATED = "activated"
    DEACTIVATED = "deactivated"
    PINNED = "pinned"
    UNPINNED = "unpinned"
    OUTCOME = "outcome"
    EXPIRED = "expired"
    DECAYED = "decayed"
    COMPRESSED = "compressed"
    MERGED = "merged"
    EVICTED = "evicted"
    CLEARED = "cleared"
    STALE = "stale"
    RESTORED = "restored"
    DELETED = "deleted"
    SUPERSEDED = "superseded"
    UNDONE = "undone"


def sql_literal(value: models.TextChoices | str) -> str:
    """A choice value (an identifier-like string the models define) as an SQL literal."""
    text = str(value)
    if not text.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"not a choice value: {text!r}")
    return f"'{text}'"
