from __future__ import annotations

import pytest

from mcp_http import transport


@pytest.fixture(autouse=True)
def _api_threads_let_go_of_the_database():
    """The threads that answer the tools' API calls hold database connections of their
    own: they end with each test, so the test database can be dropped."""
    yield
    transport.stop_threads()
