"""Rate limits per API key (or signed-in user, or address), held by all processes together.

DRF's throttle keeps each client's request history as one cache value that it reads,
changes and writes back: two workers answering the same key at once each write their own
history, and requests go uncounted. Here each request adds one to a counter of its fixed
window with the cache's atomic ``incr`` (Redis's INCR when ``CACHE_URL`` is set), in the
``throttle`` cache that every process of the service shares: a key gets its rate in total,
however many workers answer it. Without Redis the counters are files under ``VAR_DIR``:
shared by the processes of one machine, but a file is read and written back, so requests
that race may go uncounted (see the README).
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.cache import caches
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from api.auth import api_key_of


class PerKeyRateThrottle(SimpleRateThrottle):
    """One budget per API key (or per signed-in user, or per address) and fixed window."""

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

    def allow_request(self, request: Request, view: Any) -> bool:
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        key = self.get_cache_key(request, view)
        now = time.time()
        window = int(now // self.duration)
        self.wait_seconds = (window + 1) * self.duration - now
        counter = f"{key}:{window}"
        cache = caches["throttle"]
        # The first request of a window creates its counter (add never overwrites one).
        cache.add(counter, 0, timeout=self.duration + 5)
        try:
            count = cache.incr(counter)
        except ValueError:  # expired between add and incr
            cache.add(counter, 1, timeout=self.duration + 5)
            count = 1
        return count <= self.num_requests

    def wait(self) -> float:
        return max(1.0, self.wait_seconds)
