from __future__ import annotations

import uuid

import pytest

from memories.actors import Actor
from memories.candidates import forget_common_words
from tests.factories import MemoryFactory, ProjectFactory, ReviewerFactory, RunFactory, UserFactory


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
    """Each test reads the table's statistics of common words afresh."""
    forget_common_words()


@pytest.fixture(autouse=True)
def _private_assembly_cache(settings):
    """Each test gets its own empty in-memory assembly cache."""
    settings.CACHES = {
        **settings.CACHES,
        "assembly": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"assembly-{uuid.uuid4().hex}",
        },
    }
