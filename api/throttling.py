"""Rate and concurrency limits per API key (or signed-in user, or address), held by all
processes together.

DRF's throttle keeps each client's request history as one cache value that it reads,
changes and writes back: two workers answering the same key at once each write their own
history, and requests go uncounted. Here each request adds one to a counter of its fixed
window with the cache's atomic ``incr`` (Redis's INCR when ``CACHE_URL`` is set), in the
``throttle`` cache that every process of the service shares: a key gets its rate in total,
however many workers answer it. Without Redis the counters are files under ``VAR_DIR``:
shared by the processes of one machine, but a file is read and written back, so requests
that race may go uncounted (docs/api.md, Who may do what).
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.cache import caches
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from api import slots
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
        return _add_one(counter, self.duration + 5) <= self.num_requests

    def wait(self) -> float:
        return max(1.0, self.wait_seconds)


class ConcurrencyThrottle(PerKeyRateThrottle):
    """At most API_KEY_CONCURRENCY requests of one key (or user, or address) at once.

    Web workers are few and each answers one request at a time, so one key sending many
    slow requests together could occupy them all and leave the service to nobody else. Each
    request takes a slot, a lease every process sees (api.slots: Redis, or PostgreSQL), and
    gives it back once its response is sent (api.middleware); a slot never given back (a
    worker killed) frees itself API_SLOT_SECONDS after it was taken."""

    scope = "inflight"

    def allow_request(self, request: Request, view: Any) -> bool:
        limit = settings.API_KEY_CONCURRENCY
        if limit <= 0 or getattr(request._request, "slot", None) is not None:
            return True
        lease = slots.take(self.get_cache_key(request, view), limit)
        if isinstance(lease, slots.Lease):
            request._request.slot = lease
            return True
        return lease

    def wait(self) -> float:
        return 1.0


def _add_one(counter: str, seconds: float) -> int:
    """Add one to a shared counter, atomically, and return its new value; the first addition
    creates it to last ``seconds`` (``add`` never overwrites a counter that exists)."""
    cache = caches["throttle"]
    cache.add(counter, 0, timeout=seconds)
    try:
        return int(cache.incr(counter))
    except ValueError:  # it expired between add and incr
        cache.add(counter, 1, timeout=seconds)
        return 1
