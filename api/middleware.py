"""Gives back a request's concurrency slot (api.throttling.ConcurrencyThrottle, api.slots)
once its response is done, whatever happened to it.

A streamed response (the export) does its work after the view returned, as the server sends
it: its slot is given back when the last part has been produced (before the server ends the
response, so that the client's next request finds it free), or when the server closes the
response early (the client went away). A slot never given back (a worker killed mid-stream)
frees itself at its deadline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse

from api.slots import Lease


class ReleaseSlotMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            response = self.get_response(request)
        except BaseException:
            _give_back(request)
            raise
        lease: Lease | None = getattr(request, "slot", None)
        if lease is None:
            return response
        if isinstance(response, StreamingHttpResponse) and not response.is_async:
            response.streaming_content = _until_sent(response.streaming_content, lease)
            response._resource_closers.append(lease.give_back)
        else:
            lease.give_back()
        return response


def _give_back(request: HttpRequest) -> None:
    lease: Lease | None = getattr(request, "slot", None)
    if lease is not None:
        lease.give_back()


def _until_sent(parts: Iterable[bytes], lease: Lease) -> Iterator[bytes]:
    try:
        yield from parts
    finally:
        lease.give_back()
