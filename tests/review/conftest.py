import pytest


@pytest.fixture
def reviewer_client(client, reviewer):
    client.force_login(reviewer)
    return client


@pytest.fixture
def reader_client(client, plain_user):
    client.force_login(plain_user)
    return client


HTMX = {"HTTP_HX_REQUEST": "true"}
