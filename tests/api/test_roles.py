"""Signed-in people use the API with their project roles: a viewer reads, a reviewer writes
and approves, no role is a 404."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command
from rest_framework.test import APIClient

from memories.models import Membership, Memory, ReviewStatus, Role
from tests.api.conftest import url
from tests.factories import MemoryFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


def person(project, role):
    user = UserFactory()
    if role:
        Membership.objects.create(user=user, project=project, role=role)
    client = APIClient()
    client.force_authenticate(user)
    return client, user


@pytest.fixture
def two():
    a, b = ProjectFactory(slug="alpha"), ProjectFactory(slug="beta")
    return a, b, MemoryFactory(project=a), MemoryFactory(project=b)


def test_a_viewer_reads_and_writes_nothing(two):
    a, b, in_a, in_b = two
    client, _ = person(a, Role.VIEWER)
    assert [p["slug"] for p in client.get("/api/projects/").json()["projects"]] == ["alpha"]
    assert client.get(url(a, "memories", in_a.pk)).status_code == 200
    assert client.get(url(b, "memories", in_b.pk)).status_code == 404
    refused = client.post(url(a, "memories"), {"type": "pattern", "content": "x"}, format="json")
    assert refused.status_code == 403
    assert "reviewer role in project 'alpha'" in refused.json()["error"]["message"]
    assert client.patch(url(a, "memories", in_a.pk, "approve")).status_code == 403
    assert Memory.objects.get(pk=in_a.pk).review_status == ReviewStatus.PENDING


def test_a_reviewer_writes_and_approves_in_their_project_only(two):
    a, b, in_a, in_b = two
    client, _ = person(a, Role.REVIEWER)
    assert client.patch(url(a, "memories", in_a.pk, "approve")).status_code == 200
    assert Memory.objects.get(pk=in_a.pk).review_status == ReviewStatus.APPROVED
    assert client.patch(url(b, "memories", in_b.pk, "approve")).status_code == 404
    assert Memory.objects.get(pk=in_b.pk).review_status == ReviewStatus.PENDING
    created = client.post(url(a, "memories"), {"type": "pattern", "content": "x"}, format="json")
    assert created.status_code == 201


def test_no_role_sees_no_project_and_no_global_memory(two):
    a, _, _, _ = two
    client, _ = person(a, None)
    assert client.get("/api/projects/").json()["projects"] == []
    assert client.get("/api/memories/global").status_code == 404


def test_grant_role_gives_and_takes_a_role(two):
    a = two[0]
    user = UserFactory(username="dana")
    call_command("grant_role", "dana", "alpha", "reviewer")
    assert Membership.objects.get(user=user, project=a).role == Role.REVIEWER
    call_command("grant_role", "dana", "alpha", "viewer")
    assert Membership.objects.get(user=user, project=a).role == Role.VIEWER
    call_command("grant_role", "dana", "alpha", "--remove")
    assert not Membership.objects.filter(user=user).exists()
    call_command("grant_role", "dana", "--global-reviewer")
    assert user.user_permissions.filter(codename="review_global_memory").exists()


def test_admin_lists_and_changes_only_the_persons_projects(client, two):
    a, _, in_a, in_b = two
    staff = UserFactory(is_staff=True)
    staff.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_memory", "change_memory", "view_apikey"])
    )
    Membership.objects.create(user=staff, project=a, role=Role.REVIEWER)
    client.force_login(staff)
    page = client.get("/admin/memories/memory/").text
    assert f'name="_selected_action" value="{in_a.pk}"' in page
    assert f'name="_selected_action" value="{in_b.pk}"' not in page
    assert client.get(f"/admin/memories/memory/{in_b.pk}/change/").status_code == 302  # gone
    client.post(
        "/admin/memories/memory/",
        {"action": "approve", "_selected_action": [in_a.pk, in_b.pk]},
    )
    assert Memory.objects.get(pk=in_a.pk).review_status == ReviewStatus.APPROVED
    assert Memory.objects.get(pk=in_b.pk).review_status == ReviewStatus.PENDING
