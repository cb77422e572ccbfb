"""How each database of the settings connects: the primary and each read replica alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dj_database_url


@dataclass(frozen=True)
class Connections:
    """The connection knobs of config.settings, applied to one database's settings."""

    pool: dict[str, int] | None  # psycopg's pool (min_size, max_size, timeout), or none
    conn_max_age: int
    statement_timeout_ms: int
    jit: bool

    def of(self, database: dict[str, Any]) -> dict[str, Any]:
        database = {**database, "OPTIONS": dict(database.get("OPTIONS") or {})}
        options = database["OPTIONS"]
        if self.pool is not None:
            database["CONN_MAX_AGE"] = 0  # the pool keeps the connections
            options["pool"] = dict(self.pool)
        else:
            database["CONN_MAX_AGE"] = self.conn_max_age
            database["CONN_HEALTH_CHECKS"] = True
        # psycopg prepares only the statements asked to be prepared (memories.statements): a
        # number of runs this large is never reached (None would refuse even those).
        options.setdefault("prepare_threshold", 2**31 - 1)
        flags = [options.get("options", "")]
        if self.statement_timeout_ms > 0:
            flags.append(f"-c statement_timeout={self.statement_timeout_ms}")
        if not self.jit:
            flags.append("-c jit=off")
        options["options"] = " ".join(filter(None, flags))
        return database

    def replica(self, url: str, connect_timeout: int) -> dict[str, Any]:
        """A read replica's settings: no longer a wait than ``connect_timeout`` for one that
        does not answer, and, in the test suite, the primary's test database."""
        replica = self.of(dict(dj_database_url.parse(url)))
        replica["OPTIONS"]["connect_timeout"] = connect_timeout
        if self.pool is not None:
            replica["OPTIONS"]["pool"]["timeout"] = connect_timeout
        replica["TEST"] = {"MIRROR": "default"}
        return replica
