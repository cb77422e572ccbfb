from __future__ import annotations

import os
import uuid

import pytest

from memories.actors import Actor
from memories.services import uses
from memories.statistics import forget_common_words
from memories.words import forget_task_words
from tests.factories import MemoryFactory, ProjectFactory, ReviewerFactory, RunFactory, UserFactory

USES_REDIS = os.environ.get("TEST_MEMORY_USES_URL", "redis://127.0.0.1:6379/13")


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def project(db):
    return ProjectFactory()


@pytest.fixture
def other_project(db):
    return ProjectFactory()


@pytest.fixture
def reviewer(db):
    return ReviewerFactory()


@pytest.fixture
def reviewer_actor(reviewer):
    return Actor.for_user(reviewer)


@pytest.fixture
def plain_user(db):
    return UserFactory()


@pytest.fixture
def system_actor():
    return Actor.system("tests")


@pytest.fixture
def make_memory(db):
    return MemoryFactory


@pytest.fixture
def make_run(db):
    return RunFactory


@pytest.fixture(autouse=True)
def _fresh_word_statistics():
    """Each test reads the table's statistics of common words, and tasks' words, afresh."""
    forget_common_words()
    forget_task_words()


@pytest.fixture(autouse=True)
def _jobs_in_one_part(settings):
    """A policy task run in a test does its whole job itself unless the test asks for parts."""
    settings.POLICY_JOB_PARTS = 1


@pytest.fixture(autouse=True)
def _uses_written_at_once(settings):
    """Uses of memories are written at once unless a test gives them a Redis buffer."""
    settings.MEMORY_USES_URL = ""


@pytest.fixture
def buffered(settings):
    """Uses noted in the machine's Redis, under this test database's keys (emptied after)."""
    settings.MEMORY_USES_URL = USES_REDIS
    client, counts, last = uses._buffer()
    client.delete(counts, last)
    yield client, counts, last
    client.delete(counts, last)


@pytest.fixture(autouse=True)
def _private_caches(settings):
    """Each test gets its own empty in-memory assembly cache and rate-limit counters."""
    settings.CACHES = {
        **settings.CACHES,
        **{
            name: {
                "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                "LOCATION": f"{name}-{uuid.uuid4().hex}",
            }
            for name in ("assembly", "throttle")
        },
    }


@pytest.fixture
def heard():
    """The announcements of the store's hook (memories.hooks) made during a test."""
    from memories.hooks import MemoriesChanged, memories_changed

    changes: list[MemoriesChanged] = []

    def listen(*, change: MemoriesChanged, **kwargs):
        changes.append(change)

    memories_changed.connect(listen, dispatch_uid="tests.heard")
    yield changes
    memories_changed.disconnect(dispatch_uid="tests.heard")


@pytest.fixture(scope="session", autouse=True)
def _source_helpers_let_go(django_db_setup):
    """The assembly's helper threads (assembly.sources) close their connections before the
    test database is dropped."""
    yield
    from assembly.sources import close_helper_connections

    close_helper_connections()
