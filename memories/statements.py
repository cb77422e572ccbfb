"""Hand-written statements on hot paths, through Django's connection (logged like any query)
but with server-side parameters, and prepared where planning costs more than running.

Django's cursors bind parameters client-side and never prepare; these cursors bind them
server-side (arrays and text go as values). A prepared statement is planned once per
connection; only statements whose best plan does not depend on their values are prepared
(settings: psycopg prepares nothing it is not asked to). Prepared statements need a direct
connection or a session-mode pooler, not a transaction-mode one.
"""

from __future__ import annotations

from typing import Any, cast

import psycopg
from django.db import connection as default_connection


class _PreparingCursor(psycopg.Cursor):
    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        kwargs.setdefault("prepare", True)
        return super().execute(query, params, **kwargs)


def server_cursor(*, prepare: bool = False, using: Any = None) -> Any:
    """A cursor of Django's connection (or of ``using``, another database's) binding
    parameters server-side (``prepare``: and preparing what it runs)."""
    connection = using if using is not None else default_connection
    connection.ensure_connection()
    raw = (_PreparingCursor if prepare else psycopg.Cursor)(connection.connection)
    wrap = connection.make_debug_cursor if connection.queries_logged else connection.make_cursor
    return wrap(cast(Any, raw))
