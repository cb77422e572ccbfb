"""An embedded PostgreSQL for machines with no DATABASE_URL.

The ``pgserver`` package ships PostgreSQL binaries; the server lives in a data
folder under the project, listens only on a Unix socket inside that folder, and
is shared by every process of the service (web, worker, beat, tests). pgserver
stops it when the last process using it exits.
"""

from __future__ import annotations

import atexit
import json
import warnings
from pathlib import Path
from typing import Any

import psutil

HANDLES_FILE = ".handle_pids.json"


def _forget_dead_processes(data_dir: Path) -> None:
    """Drop processes that died without saying goodbye (a SIGTERM skips their exit hooks),
    so that the last live process stops the server."""
    from pgserver.postgres_server import PostgresServer

    handles = data_dir / HANDLES_FILE
    with PostgresServer._lock:
        if not handles.exists():
            return
        pids = json.loads(handles.read_text() or "[]")
        alive = [pid for pid in pids if psutil.pid_exists(pid)]
        if alive != pids:
            handles.write_text(json.dumps(alive))


def embedded_database(data_dir: Path) -> dict[str, Any]:
    """Start (or join) the embedded server and return a Django DATABASES entry."""
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset; pgserver copes.
        warnings.simplefilter("ignore")
        import pgserver

        data_dir.parent.mkdir(parents=True, exist_ok=True)
        if data_dir.exists():
            _forget_dead_processes(data_dir)
        server = pgserver.get_server(data_dir, cleanup_mode="stop")
    # Registered after pgserver's own exit hook, so it runs first.
    atexit.register(_forget_dead_processes, data_dir)
    info = server.get_postmaster_info()
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "postgres",
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": str(info.socket_dir),
        "PORT": "",
    }
