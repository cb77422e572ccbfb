"""An embedded PostgreSQL for machines with no DATABASE_URL.

The ``pgserver`` package ships PostgreSQL binaries; the server lives in a data
folder under the project, listens only on a Unix socket inside that folder, and
is shared by every process of the service (web, worker, beat, tests). It stops
when the last process using it exits.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any


def embedded_database(data_dir: Path) -> dict[str, Any]:
    """Start (or join) the embedded server and return a Django DATABASES entry."""
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset; pgserver copes.
        warnings.simplefilter("ignore")
        import pgserver

        data_dir.parent.mkdir(parents=True, exist_ok=True)
        server = pgserver.get_server(data_dir, cleanup_mode="stop")
    info = server.get_postmaster_info()
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "postgres",
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": str(info.socket_dir),
        "PORT": "",
    }
