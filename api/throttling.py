from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from api.auth import api_key_of


class PerKeyRateThrottle(SimpleRateThrottle):
    """One budget per API key (or per signed-in user, or per address)."""

    scope = "api"

    def get_rate(self) -> str:
        # Read at call time (DRF's default reads its settings once, at import).
        return settings.API_THROTTLE_RATE

    def get_cache_key(self, request: Request, view: Any) -> str:
        api_key = api_key_of(request)
        if api_key is not None:
            ident = f"key:{api_key.prefix}"
        elif request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            ident = f"addr:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}
