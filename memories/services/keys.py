"""Per-project API keys: created, revoked, their use noted."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils import timezone

from memories.keys import API_KEY_TOKEN_PREFIX, hash_secret
from memories.models import ApiKey, Project

API_KEY_LAST_USED_RESOLUTION = timedelta(minutes=1)


def api_key_create(*, project: Project, name: str) -> tuple[ApiKey, str]:
    """A new key for ``project``. Returns the key and its token, which is shown only once."""
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": "An API key needs a name."})
    prefix = secrets.token_hex(4)
    secret = secrets.token_urlsafe(32)
    api_key = ApiKey(project=project, name=name, prefix=prefix, secret_hash=hash_secret(secret))
    api_key.full_clean()
    api_key.save()
    return api_key, f"{API_KEY_TOKEN_PREFIX}_{prefix}_{secret}"


def api_key_revoke(*, api_key: ApiKey, now: datetime | None = None) -> ApiKey:
    if api_key.revoked_at is None:
        api_key.revoked_at = now or timezone.now()
        api_key.save(update_fields=["revoked_at"])
    return api_key


def api_key_touch(*, api_key: ApiKey, now: datetime | None = None) -> None:
    """Record use, at most one write a minute per key (a request never waits on a hot row)."""
    now = now or timezone.now()
    if api_key.last_used_at and now - api_key.last_used_at < API_KEY_LAST_USED_RESOLUTION:
        return
    ApiKey.objects.filter(pk=api_key.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - API_KEY_LAST_USED_RESOLUTION)
    ).update(last_used_at=now)
    api_key.last_used_at = now
