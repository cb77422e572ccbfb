"""Helpers for tests of concurrent writers: each call on a thread of its own (so on a real,
separate PostgreSQL connection), and a way to tell when they wait on a lock."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import connection, connections


def waiting_on_locks() -> int:
    """How many sessions of the test database wait on a lock now."""
    with connection.cursor() as cursor:
        # Activity statistics are a snapshot per transaction unless cleared.
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


@dataclass
class Call:
    """A call running on its own thread (its own database connection)."""

    function: Callable[[], object]
    result: object = None
    error: BaseException | None = None
    thread: threading.Thread = field(init=False)

    def __post_init__(self) -> None:
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.result = self.function()
        except BaseException as error:  # reported by the test
            self.error = error
        finally:
            connections.close_all()

    @property
    def done(self) -> bool:
        return not self.thread.is_alive()

    def join(self) -> object:
        self.thread.join(timeout=60)
        assert self.done, "the call never ended"
        if self.error is not None:
            raise self.error
        return self.result


def wait_until(condition: Callable[[], bool], what: str, seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.02)


def start_waiting(function: Callable[[], object], waiting: int) -> Call:
    """Start ``function`` on its own thread; return once it ended, or once ``waiting``
    sessions of the test database wait on a lock (it among them)."""
    call = Call(function)
    wait_until(
        lambda: call.done or waiting_on_locks() >= waiting,
        f"the call ends or {waiting} sessions wait on a lock",
    )
    return call
