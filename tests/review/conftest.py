import pytest
from django.contrib.auth.models import Permission


@pytest.fixture
def reviewer_client(client, reviewer):
    client.force_login(reviewer)
    return client


@pytest.fixture
def reader_client(client, plain_user):
    """A viewer of every project: reads everything, changes nothing."""
    plain_user.user_permissions.add(
        Permission.objects.get(content_type__app_label="memories", codename="view_every_project")
    )
    client.force_login(plain_user)
    return client


HTMX = {"HTTP_HX_REQUEST": "true"}
