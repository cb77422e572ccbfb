from __future__ import annotations

import pytest

from mcp_http import transport
from memories import services
from tests.factories import ProjectFactory


@pytest.fixture(autouse=True)
def _api_threads_let_go_of_the_database():
    """The threads that answer the tools' API calls hold database connections of their
    own: they end with each test, so the test database can be dropped."""
    yield
    transport.stop_threads()


@pytest.fixture(autouse=True)
def _generous_limits(settings):
    settings.API_THROTTLE_RATE = "100000/min"


@pytest.fixture
def alpha():
    """A project and an agent's key for it."""
    project = ProjectFactory(slug="alpha")
    _, key = services.api_key_create(project=project, name="agent")
    return project, key
