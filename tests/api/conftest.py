from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from memories import services


@pytest.fixture(autouse=True)
def _no_throttling(settings):
    settings.API_THROTTLE_RATE = "100000/min"


def client_with_key(project, name="agent"):
    _, token = services.api_key_create(project=project, name=name)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    client.token = token
    return client


@pytest.fixture
def agent(project):
    """An API client authenticated with a key of ``project``."""
    return client_with_key(project)


@pytest.fixture
def reviewer_client(reviewer):
    from django.contrib.auth.models import Permission

    reviewer.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="memories",
            codename__in=["view_memory", "add_memory", "change_memory", "delete_memory"],
        )
    )
    client = APIClient()
    client.force_login(reviewer)
    return client


def url(project, *parts):
    ref = project if isinstance(project, str) else project.slug
    return "/".join([f"/api/projects/{ref}", *[str(p) for p in parts]])
