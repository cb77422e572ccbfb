"""Helpers for tests that start the project's own processes (gunicorn, a Celery worker)."""

from __future__ import annotations

from urllib.parse import quote

from django.db import connection


def database_url() -> str:
    """The test database as a ``DATABASE_URL`` for a process a test starts: over TCP, or
    through the Unix socket folder of the embedded server (as libpq's ``host`` option)."""
    database = connection.settings_dict
    user = quote(database["USER"], safe="")
    password = f":{quote(database['PASSWORD'], safe='')}" if database["PASSWORD"] else ""
    name = quote(database["NAME"], safe="")
    host = database["HOST"] or "127.0.0.1"
    if host.startswith("/"):
        return f"postgres://{user}{password}@/{name}?host={quote(host, safe='')}"
    port = f":{database['PORT']}" if database["PORT"] else ""
    return f"postgres://{user}{password}@{host}{port}/{name}"
