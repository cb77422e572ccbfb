"""Operators' admin: filters, search, and bulk actions that go through the services."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone

from knowledge.models import MemoryPair
from memories.models import EventAction, Memory, MemoryEvent, ReviewStatus

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:memories_memory_changelist")


@pytest.fixture
def admin_client(client, reviewer):
    superuser = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(superuser)
    return client


def run_action(client, action, memories, **extra):
    return client.post(
        CHANGELIST,
        {"action": action, ACTION_CHECKBOX_NAME: [m.pk for m in memories], **extra},
        follow=True,
    )


def fresh(memories):
    return list(Memory.objects.filter(pk__in=[m.pk for m in memories]).order_by("pk"))


def last_action(memory):
    return MemoryEvent.objects.filter(memory_id=memory.pk).order_by("-id").first().action


@pytest.fixture
def two(project, make_memory):
    return [make_memory(project=project), make_memory(project=project, source="learning")]


def test_bulk_approve(admin_client, two):
    response = run_action(admin_client, "approve", two)
    assert "Approve: 2 changed" in response.content.decode()
    for memory in fresh(two):
        assert (memory.confidence, memory.review_status) == (1.0, ReviewStatus.APPROVED)
        assert memory.approved_by.username == "root"
        assert last_action(memory) == EventAction.APPROVED


def test_bulk_approve_needs_the_review_permission(client, two):
    staff = get_user_model().objects.create_user("staff", password="pw", is_staff=True)
    staff.user_permissions.add(
        *__import__(
            "django.contrib.auth.models", fromlist=["Permission"]
        ).Permission.objects.filter(codename__in=["view_memory", "change_memory"])
    )
    # A viewer of the project sees its memories in the admin and may not approve them.
    from memories.models import Membership

    Membership.objects.create(user=staff, project=two[0].project, role="viewer")
    client.force_login(staff)
    response = run_action(client, "approve", two)
    assert "reviewer role" in response.content.decode()
    assert all(m.review_status == ReviewStatus.PENDING for m in fresh(two))


def test_bulk_reject(admin_client, two):
    run_action(admin_client, "reject", two)
    for memory in fresh(two):
        assert (memory.active, memory.review_status) == (False, ReviewStatus.REJECTED)
        assert last_action(memory) == EventAction.REJECTED


def test_bulk_deactivate_and_activate(admin_client, two):
    run_action(admin_client, "deactivate", two)
    assert [m.active for m in fresh(two)] == [False, False]
    run_action(admin_client, "activate", two)
    assert [m.active for m in fresh(two)] == [True, True]
    assert last_action(two[0]) == EventAction.ACTIVATED


def test_bulk_pin_and_unpin(admin_client, two):
    run_action(admin_client, "pin", two)
    assert [m.pinned for m in fresh(two)] == [True, True]
    run_action(admin_client, "unpin", two)
    assert [m.pinned for m in fresh(two)] == [False, False]
    assert last_action(two[0]) == EventAction.UNPINNED


def test_bulk_extend_expiry_by_30_days(admin_client, project, make_memory):
    memories = [make_memory(project=project, type="context") for _ in range(2)]
    before = [m.expires_at for m in memories]
    run_action(admin_client, "extend_expiry_by_30_days", memories)
    assert [m.expires_at for m in fresh(memories)] == [b + timedelta(days=30) for b in before]


def test_bulk_clear_expiry(admin_client, project, make_memory):
    memories = [make_memory(project=project, type="warning") for _ in range(2)]
    run_action(admin_client, "clear_expiry", memories)
    assert [m.expires_at for m in fresh(memories)] == [None, None]


def test_bulk_change_type_asks_then_applies(admin_client, two):
    page = run_action(admin_client, "change_type", two)
    assert "Change the type of the selected memories" in page.content.decode()
    run_action(admin_client, "change_type", two, type="warning", apply="1")
    assert [m.type for m in fresh(two)] == ["warning", "warning"]
    assert MemoryEvent.objects.get(memory_id=two[0].pk, action="updated").changes["type"] == [
        "pattern",
        "warning",
    ]


def test_bulk_delete_keeps_history(admin_client, two):
    run_action(admin_client, "delete_with_history", two)
    assert not Memory.objects.filter(pk__in=[m.pk for m in two]).exists()
    assert MemoryEvent.objects.filter(action="deleted").count() == 2


def test_stock_delete_selected_is_not_offered(admin_client, two):
    response = admin_client.get(CHANGELIST)
    assert 'value="delete_selected"' not in response.content.decode()


@pytest.mark.parametrize(
    "query",
    [
        "project__id__exact={project}",
        "type__exact=pattern",
        "source__exact=run",
        "active__exact=1",
        "review_status__exact=pending",
        "tier__exact=hot",
        "pinned__exact=0",
        "expiring=7",
        "expiring=expired",
    ],
)
def test_every_list_filter_answers(admin_client, two, project, query):
    response = admin_client.get(f"{CHANGELIST}?{query.format(project=project.pk)}")
    assert response.status_code == 200


def test_expiring_soon_filter(admin_client, project, make_memory):
    soon = make_memory(project=project, type="context", content="soon")
    make_memory(project=project, type="context", content="later")
    Memory.objects.filter(pk=soon.pk).update(expires_at=timezone.now() + timedelta(days=2))
    response = admin_client.get(f"{CHANGELIST}?expiring=7")
    assert list(response.context["cl"].result_list) == [soon]


def test_search_covers_content_and_tags(admin_client, project, make_memory):
    by_content = make_memory(project=project, content="Rotate the signing keys")
    by_tag = make_memory(project=project, content="Unrelated", tags=["src/signing/**"])
    make_memory(project=project, content="Nothing here")
    response = admin_client.get(f"{CHANGELIST}?q=signing")
    assert set(response.context["cl"].result_list) == {by_content, by_tag}


def test_add_form_creates_through_the_service(admin_client, project):
    response = admin_client.post(
        reverse("admin:memories_memory_add"),
        {
            "project": project.pk,
            "scope": "project",
            "type": "warning",
            "source": "human",
            "content": "Written by an operator\x07",
            "summary": "",
            "tags": "src/**,ops",
            "relevance_score": "0.7",
            "expires_at_0": "",
            "expires_at_1": "",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    memory = Memory.objects.get()
    assert memory.content == "Written by an operator"
    assert memory.confidence == 1.0
    assert memory.token_count > 0
    assert memory.tag_patterns
    assert memory.events.get().action == EventAction.CREATED


def test_change_form_edits_through_the_service_and_shows_history(admin_client, two):
    memory = two[0]
    url = reverse("admin:memories_memory_change", args=[memory.pk])
    response = admin_client.post(
        url,
        {
            "type": "pattern",
            "content": "Edited content",
            "summary": memory.summary,
            "tags": "edited",
            "relevance_score": "0.5",
            "expires_at_0": "",
            "expires_at_1": "",
        },
    )
    assert response.status_code == 302
    memory.refresh_from_db()
    assert memory.content == "Edited content"
    event = MemoryEvent.objects.filter(memory_id=memory.pk, action="updated").get()
    assert event.reason == "edited in the admin"
    page = admin_client.get(url).content.decode()
    assert "edited in the admin" in page
    assert "created" in page


def test_other_admin_pages_render(admin_client, two, make_run, project):
    make_run(project=project)
    for name in ["project", "run", "memoryevent"]:
        assert admin_client.get(reverse(f"admin:memories_{name}_changelist")).status_code == 200
    assert admin_client.get(reverse("admin:memories_project_add")).status_code == 200


def test_an_api_key_made_in_the_admin_is_shown_once_and_works(admin_client, project):
    from rest_framework.test import APIClient

    from memories.models import ApiKey

    response = admin_client.post(
        reverse("admin:memories_apikey_add"), {"project": project.pk, "name": "ops"}, follow=True
    )
    message = next(str(m) for m in response.context["messages"])
    token = message.rsplit(" ", 1)[-1]
    api_key = ApiKey.objects.get(name="ops")
    assert token.startswith(f"ml_{api_key.prefix}_")
    assert token.split("_", 2)[2] not in api_key.secret_hash
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert client.get(f"/api/projects/{project.slug}/memories").status_code == 200
    run_action_url = reverse("admin:memories_apikey_changelist")
    admin_client.post(run_action_url, {"action": "revoke", ACTION_CHECKBOX_NAME: [api_key.pk]})
    assert client.get(f"/api/projects/{project.slug}/memories").status_code == 401


def test_archived_memories_are_restored_from_the_admin(admin_client, project, make_memory):
    from memories.models import MemoryPolicy
    from policies.eviction import evict_memories

    memories = [make_memory(project=project) for _ in range(3)]
    MemoryPolicy.objects.filter(project=project).update(max_items=1)
    evict_memories()
    response = run_action(admin_client, "restore_archived", memories)
    assert "Restore archived: 2 changed, 1 already so." in response.content.decode()
    assert all(memory.active and memory.archived_at is None for memory in fresh(memories))


def test_run_scratch_is_promoted_from_the_admin(admin_client, project, make_memory, make_run):
    scratch = make_memory(project=project, scope="run", source_run=make_run(project=project))
    response = run_action(admin_client, "promote_run_scratch", [scratch])
    assert "Promote run scratch: 1 changed" in response.content.decode()
    assert fresh([scratch])[0].scope == "project"


def test_pairs_are_listed_and_decided_in_bulk(admin_client, project, make_memory):
    old = make_memory(project=project, content="Payments API calls time out after 10 seconds.")
    new = make_memory(project=project, content="Payments API calls time out after 30 seconds.")
    pair = MemoryPair.objects.get()
    page = admin_client.get("/admin/knowledge/memorypair/")
    assert page.status_code == 200
    assert "conflict" in page.text
    response = admin_client.post(
        "/admin/knowledge/memorypair/",
        {"action": "keep_newer", ACTION_CHECKBOX_NAME: [pair.pk]},
        follow=True,
    )
    assert "1 decided" in response.text
    old.refresh_from_db()
    assert (old.active, old.superseded_by_id) == (False, new.pk)
    assert admin_client.get(f"/admin/knowledge/memorypair/{pair.pk}/change/").status_code == 200


def test_the_add_form_refuses_a_disguised_secret(admin_client, project):
    response = admin_client.post(
        reverse("admin:memories_memory_add"),
        {
            "project": project.pk,
            "scope": "project",
            "type": "warning",
            "source": "human",
            # A Cyrillic Ka (U+041A) in the AWS key's prefix.
            "content": "The bucket key is A\u041aIAIOSFODNN7EXAMPLE.",
            "summary": "",
            "tags": "ops",
            "relevance_score": "0.7",
            "expires_at_0": "",
            "expires_at_1": "",
        },
    )
    assert response.status_code == 200
    assert "AWS Access Key" in response.content.decode()
    assert not Memory.objects.exists()


def test_the_change_form_refuses_a_secret_split_by_a_space(admin_client, project, make_memory):
    memory = make_memory(project=project, content="keep me", tags=["ops"])
    response = admin_client.post(
        reverse("admin:memories_memory_change", args=[memory.pk]),
        {
            "type": memory.type,
            "content": "keep me",
            "summary": "",
            "tags": "ops,AKIAIOSF ODNN7EXAMPLE",
            "relevance_score": "0.5",
            "expires_at_0": "",
            "expires_at_1": "",
        },
    )
    assert response.status_code == 200
    assert "AWS Access Key" in response.content.decode()
    memory.refresh_from_db()
    assert memory.tags == ["ops"]
    assert not memory.events.filter(action="updated").exists()
