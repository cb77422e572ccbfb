"""What the services check before they write: readable errors before the database says no,
and the values derived from what is written (token count, content hash, tag match data)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError

from memories.models import DEFAULT_EXPIRY_DAYS, Memory, MemoryPolicy, Project
from memories.secrets import SecretsPolicy, scrub
from memories.tags import tag_keys, tag_patterns
from memories.text import clean_content, clean_tags, content_hash, summarize, to_utc
from memories.tokens import count_tokens

# Confidence is rounded at every write so that 0.3 - 0.1 is exactly 0.2, not 0.19999999999999998.
CONFIDENCE_DECIMALS = 6


class Conflict(Exception):
    """The request contradicts the stored state (e.g. a run's outcome recorded differently)."""


def clamp_confidence(value: float) -> float:
    return round(min(1.0, max(0.0, value)), CONFIDENCE_DECIMALS)


# --- validation -----------------------------------------------------------------------------


def choice(value: object, choices: Any, field_name: str) -> str:
    if value not in choices.values:
        allowed = ", ".join(choices.values)
        raise ValidationError({field_name: f"{value!r} is not one of: {allowed}."})
    return str(value)


def unit_interval(value: object, field_name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError({field_name: "Must be a number from 0 to 1."})
    if not 0.0 <= value <= 1.0:
        raise ValidationError({field_name: f"{value} is outside 0 to 1."})
    # Six decimals are plenty, and a denormal like 5e-324 would underflow in PostgreSQL.
    return round(float(value), CONFIDENCE_DECIMALS)


def aware_datetime(value: object, field_name: str) -> datetime | None:
    """An expiry: a time-zone-aware date-time, or None for never. A time already past is
    allowed: the memory is expired from the start (kept, never selected)."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise ValidationError({field_name: "Must be a date-time with a time zone."})
    return to_utc(value, field_name)


def _content_fields(content: object, *, summary: object = None) -> dict[str, Any]:
    cleaned = clean_content(content)
    if summary is None or summary == "":
        return {"content": cleaned}
    if not isinstance(summary, str):
        raise ValidationError({"summary": "Summary must be a string."})
    return {"content": cleaned, "summary": clean_content(summary)[:280]}


def text_fields(mode: str, **given: Any) -> tuple[dict[str, Any], str]:
    """The cleaned, secret-free values of the text fields in ``given`` (content with an
    optional summary, tags) and the fields derived from them; and the history's note of
    what was redacted (``mode`` as memories.secrets.scrub)."""
    fields: dict[str, Any] = {}
    if "content" in given:
        fields |= _content_fields(given["content"], summary=given.get("summary"))
    if "tags" in given:
        fields["tags"] = clean_tags(given["tags"])
    scrubbed = scrub(fields, mode)
    values: dict[str, Any] = dict(scrubbed.values)
    if "content" in values:
        content = values["content"]
        values |= {
            "summary": values.get("summary") or summarize(content),
            "token_count": count_tokens(content),
            "content_hash": content_hash(content),
        }
    if "tags" in values:
        values |= tag_fields(values["tags"])
    return values, scrubbed.note()


def tag_fields(tags: list[str]) -> dict[str, Any]:
    """Cleaned tags and the match data derived from them."""
    return {"tags": tags, "tag_patterns": tag_patterns(tags), "tag_keys": tag_keys(tags)}


def secrets_mode(project: Project | None) -> str:
    """A project's secrets policy; a global memory's secrets are always rejected."""
    return project.policy.secrets if project is not None else SecretsPolicy.REJECT


def scrubbed(values: dict[str, Any], mode: str) -> dict[str, Any]:
    """Free text other than a memory's own words (a run's title, external id and write scope,
    a change's ref, a reason), scanned for secrets like the memory's: refused under the
    reject ``mode`` (a ValidationError naming each field), redacted under redact."""
    return scrub(values, mode).values


def scrubbed_for(values: dict[str, Any], memory_ids: Iterable[int]) -> dict[str, Any]:
    """Free text about memories (why they are flagged, rejected, or a pair of them decided),
    scanned as ``scrubbed`` under the strictest secrets policy of their projects (a global
    memory's rejects). The policies are read only when a secret is found."""
    found = scrub(values, SecretsPolicy.REDACT)
    if found.redacted:
        modes = Memory.objects.filter(pk__in=memory_ids).values_list(
            "project__policy__secrets", flat=True
        )
        if any(mode != SecretsPolicy.REDACT for mode in modes):
            scrub(values, SecretsPolicy.REJECT)  # raises: each field, where, what kind
    return found.values


def default_expiry(
    *, policy: MemoryPolicy | None, memory_type: str, now: datetime
) -> datetime | None:
    """When a new memory of ``memory_type`` expires: the project's policy, else the type default."""
    days = policy.expiry_days(memory_type) if policy else DEFAULT_EXPIRY_DAYS[memory_type]
    return None if days is None else now + timedelta(days=days)
