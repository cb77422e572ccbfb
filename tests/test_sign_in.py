"""Sign-in throttling (django-axes) on the review sign-in and the admin's."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_repeated_wrong_passwords_lock_that_username_from_that_address(reviewer, path):
    reviewer.set_password("right-password-123")
    reviewer.save()
    client = Client()
    wrong = [
        client.post(path, {"username": reviewer.username, "password": "guess"}).status_code
        for _ in range(5)
    ]
    assert wrong == [200, 200, 200, 200, 429]  # the form again, then the lockout
    locked = client.post(path, {"username": reviewer.username, "password": "right-password-123"})
    assert locked.status_code == 429
    assert b"Too many sign-in attempts" in locked.content
    assert "_auth_user_id" not in client.session
    # Another address may still sign in as that user.
    elsewhere = Client(REMOTE_ADDR="10.0.0.9")
    ok = elsewhere.post(path, {"username": reviewer.username, "password": "right-password-123"})
    assert ok.status_code == 302
    assert "_auth_user_id" in elsewhere.session


def test_a_success_before_the_limit_resets_the_count(reviewer):
    reviewer.set_password("right-password-123")
    reviewer.save()
    client = Client()
    for _ in range(4):
        client.post("/accounts/login/", {"username": reviewer.username, "password": "guess"})
    good = {"username": reviewer.username, "password": "right-password-123"}
    assert client.post("/accounts/login/", good).status_code == 302
    client.logout()
    for _ in range(4):
        client.post("/accounts/login/", {"username": reviewer.username, "password": "guess"})
    assert client.post("/accounts/login/", good).status_code == 302
