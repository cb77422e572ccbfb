"""Traces, through OpenTelemetry, sent to an OTLP endpoint when one is named.

``configure()`` runs once in each process that serves: the web server's (config/wsgi.py and
config/asgi.py; gunicorn loads the application once before it forks its workers, and the
SDK starts its export thread again in each worker) and each Celery worker process
(config/celery.py, on ``worker_process_init``). With ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) set, and ``OTEL_SDK_DISABLED`` not ``true``, it sets
a tracer provider (``service.name`` from ``OTEL_SERVICE_NAME``, else ``memory-layer``) that
exports in batches over the protocol ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` or
``OTEL_EXPORTER_OTLP_PROTOCOL`` names (``http/protobuf`` by default; ``grpc`` only with its
exporter installed: asked for without it, start-up fails and says so), and instruments
Django, psycopg, Redis and Celery. The SDK reads the rest of the standard variables itself
(``OTEL_EXPORTER_OTLP_HEADERS``, ``…_TIMEOUT``, ``…_COMPRESSION``, ``OTEL_BSP_*``,
``OTEL_TRACES_SAMPLER``, ``OTEL_RESOURCE_ATTRIBUTES``).

Without an endpoint nothing is imported, set or wrapped: the spans the code opens
(``assembly.services``) go to the API's no-op tracer.

What no log holds, no span holds either: SQL is recorded without its parameters, Redis
commands without their arguments, and a request's URL without its query string.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured
from opentelemetry import trace

if TYPE_CHECKING:
    from django.http import HttpRequest
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

    from memories.models import Project

SERVICE_NAME = "memory-layer"
PROTOCOLS = ("http/protobuf", "grpc")
# Probes and scrapes are not traced unless the standard variables say otherwise: a
# readiness probe every few seconds would be most of the traces.
EXCLUDED_URLS = "/healthz$,/readyz$,/metrics$"

_provider: TracerProvider | None = None
_lock = threading.Lock()


def enabled(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether traces are to be sent: an OTLP endpoint is named and the SDK is not off."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return bool(
        environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
        or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    )


def configure() -> bool:
    """Trace this process when an endpoint is named (see the module); whether it is traced.
    Calling it again does nothing more."""
    global _provider
    # The settings first: they load the .env file, where the variables may be.
    from django.conf import settings

    settings.MIDDLEWARE  # noqa: B018
    if not enabled():
        return False
    with _lock:
        if _provider is not None:
            return True
        _provider = _start()
    return True


def _start() -> TracerProvider:
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor
    from opentelemetry.sdk.resources import SERVICE_NAME as NAME
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create()
    if str(resource.attributes.get(NAME, "unknown_service")).startswith("unknown_service"):
        resource = resource.merge(Resource({NAME: SERVICE_NAME}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(exporter()))
    trace.set_tracer_provider(provider)
    explicit = os.environ.get("OTEL_PYTHON_DJANGO_EXCLUDED_URLS") or os.environ.get(
        "OTEL_PYTHON_EXCLUDED_URLS"
    )
    # Django's middleware goes first in MIDDLEWARE, so this runs before the application
    # loads its middleware (config/wsgi.py: before get_wsgi_application).
    DjangoInstrumentor().instrument(
        tracer_provider=provider,
        excluded_urls=None if explicit else EXCLUDED_URLS,
        request_hook=_without_query_string,
    )
    # Connections opened from now on are traced (Django opens its own on first use), with
    # Django's cursor class kept; no comments are added to the SQL sent.
    PsycopgInstrumentor().instrument(tracer_provider=provider, enable_commenter=False)
    RedisInstrumentor().instrument(tracer_provider=provider)
    CeleryInstrumentor().instrument(tracer_provider=provider)
    return provider


def exporter(environ: Mapping[str, str] = os.environ) -> SpanExporter:
    """The OTLP span exporter for the protocol the standard variables name (its endpoint,
    headers and timeout it reads from them itself)."""
    protocol = (
        environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "").strip()
        or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "").strip()
        or "http/protobuf"
    ).lower()
    if protocol == "http/protobuf":
        import requests
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        # A session of our own, so that a process forked from this one (a gunicorn worker)
        # never writes on a connection the parent opened: the child lets go of them.
        session = requests.Session()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=session.close)
        return OTLPSpanExporter(session=session)
    if protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                OTLPSpanExporter as GrpcSpanExporter,
            )
        except ImportError:
            raise ImproperlyConfigured(
                "OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs the package"
                " opentelemetry-exporter-otlp-proto-grpc, which is not installed: install it,"
                " or send traces over http/protobuf (a collector's port 4318)."
            ) from None
        return GrpcSpanExporter()
    raise ImproperlyConfigured(
        f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported here: use"
        f" {' or '.join(PROTOCOLS)}."
    )


def shutdown() -> None:
    """Send what is still waiting and stop (a worker process that is about to exit)."""
    if _provider is not None:
        _provider.shutdown()


def _without_query_string(span: Any, request: HttpRequest) -> None:
    """A request's URL as the access log has it: without the query string, which can hold
    what must not be kept (a search's words, a key sent where it should not be)."""
    if not span.is_recording() or not request.META.get("QUERY_STRING"):
        return
    path = request.path
    attributes = getattr(span, "attributes", None) or {}
    if "http.target" in attributes:
        span.set_attribute("http.target", path)
    if "http.url" in attributes:
        span.set_attribute("http.url", str(attributes["http.url"]).split("?", 1)[0])
    if "url.full" in attributes:
        span.set_attribute("url.full", str(attributes["url.full"]).split("?", 1)[0])
    if "url.query" in attributes:
        span.set_attribute("url.query", "")


def record_project(project: Project) -> None:
    """Name the project on the span of what is being handled (the request's), when traced."""
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attributes({"memory.project": project.slug, "memory.project_id": project.pk})
