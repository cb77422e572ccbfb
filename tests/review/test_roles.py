"""Per-project roles on every review page and action: a person without a role in a project
gets 404 for everything of it (as for what does not exist), a viewer reads and gets 403 for
every change, a reviewer changes. The table covers every URL of the review pages."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import URLPattern, get_resolver, reverse

from assembly.learning import as_dict
from assembly.models import FitOutcome, RankingFit
from assembly.packing import Weights, weights_in_force
from knowledge.models import Entity, MemoryPair
from memories import services
from memories.actors import Actor
from memories.models import BulkEdit, Membership, Memory, MemoryPolicy, ReviewStatus, Role
from memories.services import bulk
from people import preferences
from people.models import Preference
from tests.factories import MemoryFactory, ProjectFactory, RunFactory, UserFactory

pytestmark = pytest.mark.django_db

TEN = "Calls to the ledger API time out after 10 seconds."
THIRTY = "Calls to the ledger API time out after 30 seconds."

# (URL name, method, what its arguments are, the POST data, the role it needs: "viewer" pages
# answer 200 to a viewer; "reviewer" ones 403 to a viewer and succeed for a reviewer)
ROUTES = [
    ("project-queue", "get", "slug", None, "viewer"),
    ("memories", "get", "slug", None, "viewer"),
    ("preview", "get", "slug", None, "viewer"),
    ("runs", "get", "slug", None, "viewer"),
    ("run", "get", "run", None, "viewer"),
    ("ranking", "get", "slug", None, "viewer"),
    ("ranking-restore", "post", "fit", {}, "maintainer"),
    ("project-conflicts", "get", "slug", None, "viewer"),
    ("memory", "get", "memory", None, "viewer"),
    ("memory-row", "get", "memory", None, "viewer"),
    ("conflict", "get", "pair", None, "viewer"),
    ("memory-edit", "get", "memory", None, "reviewer"),
    ("approve", "post", "memory", {}, "reviewer"),
    ("reject", "post", "memory", {}, "reviewer"),
    ("pin", "post", "memory", {}, "reviewer"),
    ("unpin", "post", "memory", {}, "reviewer"),
    ("memory-bulk", "post", None, {"action": "approve", "ids": "memory"}, "reviewer"),
    ("conflict-decide", "post", "pair", {"action": "dismiss"}, "reviewer"),
    ("conflict-bulk", "post", None, {"action": "dismiss", "ids": "pair"}, "reviewer"),
    ("undo", "post", None, {"events": "event"}, "reviewer"),
    ("entity", "get", "entity", None, "viewer"),
    ("entity-link", "post", "entity", {"action": "remove", "other": "entity"}, "reviewer"),
    ("preferences", "get", "slug", None, "viewer"),
    ("bulk-edit", "get", "slug", None, "reviewer"),
    ("bulk-edit", "post", "slug", {"action": "pin"}, "reviewer"),
    ("project-queue-bulk-edit", "get", "slug", None, "reviewer"),
    ("bulk-job", "get", "job", None, "viewer"),
    ("bulk-job-undo", "post", "job", {}, "reviewer"),
]
# Pages of every project at once: each shows only what the person may see (below).
ACROSS_PROJECTS = {"dashboard", "queue", "conflicts", "global-preferences", "queue-bulk-edit"}
# Decisions on what holds for every project: reviewers of global memories only (below).
GLOBAL_DECISIONS = {"global-preference-approve", "global-preference-reject"}


@pytest.fixture
def world(db):
    """Project A with a memory waiting for review, a pair and a run; project B likewise."""
    made = {}
    for name in ("a", "b"):
        project = ProjectFactory(slug=f"project-{name}")
        MemoryFactory(project=project, content=f"{name.upper()}: {TEN}", tags=["src/ledger/**"])
        MemoryFactory(project=project, content=f"{name.upper()}: {THIRTY}", tags=["src/ledger/**"])
        run = RunFactory(project=project)
        memory = Memory.objects.filter(project=project).order_by("id").first()
        fit = RankingFit.objects.create(
            project=project,
            outcome=FitOutcome.ADOPTED,
            weights_before=as_dict(Weights()),
            weights_after=as_dict(Weights(path=3.0)),
            reason="Adopted.",
            actor="system:tests",
        )
        made[name] = {
            "fit": fit,
            "project": project,
            "memory": memory,
            "pair": MemoryPair.objects.get(project=project),
            "event": memory.events.latest("id"),
            "run": run,
            # The literal part of the memories' tag glob.
            "entity": Entity.objects.get(project=project, key="src/ledger"),
            # A bulk edit of the project, done: its page, and its undo.
            "job": _done_job(project),
        }
    return made


def _done_job(project):
    maintainer = UserFactory()
    Membership.objects.create(user=maintainer, project=project, role=Role.MAINTAINER)
    job = bulk.bulk_edit_start(
        memories=project.memories.filter(content__contains="30 seconds"),
        action="set_tier",
        parameters={"tier": "cold"},
        actor=Actor.for_user(maintainer),
        project=project,
    )
    return bulk.bulk_edit_run(job_id=job.pk)


def member(project, role: str | None):
    user = UserFactory()
    if role is not None:
        Membership.objects.create(user=user, project=project, role=role)
    client = Client()
    client.force_login(user)
    return client, user


def call(client: Client, world, name: str, method: str, target: str | None, data):
    things = world["a"]
    args = {
        "slug": [things["project"].slug],
        "memory": [things["memory"].pk],
        "pair": [things["pair"].pk],
        "run": [things["project"].slug, things["run"].pk],
        "fit": [things["project"].slug, things["fit"].pk],
        "entity": [things["entity"].pk],
        "job": [things["job"].pk],
        None: [],
    }[target]
    body = None
    if data is not None:
        body = {
            key: (things[value].pk if value in ("memory", "pair", "event", "entity") else value)
            for key, value in data.items()
        }
    url = reverse(f"review:{name}", args=args)
    return client.get(url) if method == "get" else client.post(url, body or {})


def test_the_table_covers_every_review_url():
    review = get_resolver().namespace_dict["review"][1]
    names = {p.name for p in review.url_patterns if isinstance(p, URLPattern)}
    assert names == {route[0] for route in ROUTES} | ACROSS_PROJECTS | GLOBAL_DECISIONS


@pytest.mark.parametrize(("name", "method", "target", "data", "needs"), ROUTES)
def test_no_role_in_the_project_is_a_404(world, name, method, target, data, needs):
    for role in (None, Role.MAINTAINER):  # none anywhere; or only in project B
        client, _ = member(world["b"]["project"], role)
        response = call(client, world, name, method, target, data)
        assert response.status_code == 404, (name, role)
    assert weights_in_force(MemoryPolicy.objects.get(project=world["a"]["project"])) == Weights()
    assert Memory.objects.get(pk=world["a"]["memory"].pk).review_status == ReviewStatus.PENDING
    assert MemoryPair.objects.get(pk=world["a"]["pair"].pk).status == "open"
    assert BulkEdit.objects.count() == 2  # the two projects' own, and no other


@pytest.mark.parametrize(("name", "method", "target", "data", "needs"), ROUTES)
def test_a_viewer_reads_and_changes_nothing(world, name, method, target, data, needs):
    client, _ = member(world["a"]["project"], Role.VIEWER)
    response = call(client, world, name, method, target, data)
    assert response.status_code == (200 if needs == "viewer" else 403), name
    assert weights_in_force(MemoryPolicy.objects.get(project=world["a"]["project"])) == Weights()
    memory = Memory.objects.get(pk=world["a"]["memory"].pk)
    assert (memory.review_status, memory.pinned) == (ReviewStatus.PENDING, False)
    assert MemoryPair.objects.get(pk=world["a"]["pair"].pk).status == "open"
    assert BulkEdit.objects.count() == 2


@pytest.mark.parametrize(("name", "method", "target", "data", "needs"), ROUTES)
def test_a_reviewer_of_the_project_may(world, name, method, target, data, needs):
    client, _ = member(world["a"]["project"], Role.REVIEWER)
    response = call(client, world, name, method, target, data)
    if needs == "maintainer":
        assert response.status_code == 403, name
        client, _ = member(world["a"]["project"], Role.MAINTAINER)
        response = call(client, world, name, method, target, data)
    assert response.status_code in ((200,) if method == "get" else (200, 302)), name


def test_approve_and_bulk_approve_change_what_a_reviewer_may_only(world):
    client, _ = member(world["a"]["project"], Role.REVIEWER)
    a, b = world["a"]["memory"], world["b"]["memory"]
    refused = client.post(reverse("review:memory-bulk"), {"action": "approve", "ids": [a.pk, b.pk]})
    assert refused.status_code == 404  # B's memory is not theirs to see
    assert Memory.objects.get(pk=a.pk).review_status == ReviewStatus.PENDING
    client.post(reverse("review:memory-bulk"), {"action": "approve", "ids": [a.pk]})
    assert Memory.objects.get(pk=a.pk).review_status == ReviewStatus.APPROVED
    assert Memory.objects.get(pk=b.pk).review_status == ReviewStatus.PENDING


def test_pages_of_every_project_show_only_the_persons_projects(world):
    client, _ = member(world["a"]["project"], Role.VIEWER)
    for name in ACROSS_PROJECTS:
        page = client.get(reverse(f"review:{name}")).text
        assert "project-b" not in page, name
        assert "B: Calls" not in page, name
    assert "A: Calls" in client.get(reverse("review:queue")).text
    nobody, _ = member(world["a"]["project"], None)
    for name in ACROSS_PROJECTS:
        page = nobody.get(reverse(f"review:{name}"))
        assert page.status_code == 200
        assert "A: Calls" not in page.text
        assert "B: Calls" not in page.text


def test_a_viewer_gets_no_action_buttons(world):
    client, _ = member(world["a"]["project"], Role.VIEWER)
    page = client.get(reverse("review:project-queue", args=["project-a"])).text
    assert "A: Calls" in page
    assert 'name="action" value="approve"' not in page
    assert "Approve" not in page


def test_global_memories_are_approved_by_global_reviewers_only(world):
    proposal = MemoryFactory(project=None, scope="global", content="Use UTC everywhere.")
    reviewer, _ = member(world["a"]["project"], Role.MAINTAINER)
    assert reviewer.post(reverse("review:approve", args=[proposal.pk])).status_code == 403
    assert Memory.objects.get(pk=proposal.pk).review_status == ReviewStatus.PENDING
    global_client, user = member(world["a"]["project"], None)
    user.user_permissions.add(Permission.objects.get(codename="review_global_memory"))
    assert global_client.post(reverse("review:approve", args=[proposal.pk])).status_code == 302
    assert Memory.objects.get(pk=proposal.pk).review_status == ReviewStatus.APPROVED


def test_the_service_refuses_a_reviewer_of_another_project(world):
    _, user = member(world["b"]["project"], Role.MAINTAINER)
    with pytest.raises(Exception, match="reviewer role"):
        services.memories_approve(memory_ids=[world["a"]["memory"].pk], actor=Actor.for_user(user))
    assert Memory.objects.get(pk=world["a"]["memory"].pk).review_status == ReviewStatus.PENDING


def test_preferences_for_every_project_are_decided_by_global_reviewers_only(world):
    project = world["a"]["project"]
    proposal = preferences.propose_global(
        user_ref="ana", key="language", value="de", actor=Actor.system("t"), proposed_in=project
    )
    maintainer, _ = member(project, Role.MAINTAINER)
    page = maintainer.get(reverse("review:global-preferences")).text
    assert "language" in page  # their project proposed it
    assert "a reviewer of global memories decides" in page
    for action in ("approve", "reject"):
        url = reverse(f"review:global-preference-{action}", args=[proposal.pk])
        assert maintainer.post(url).status_code == 403
    assert Preference.objects.get(pk=proposal.pk).status == "pending"
    stranger, _ = member(world["b"]["project"], Role.MAINTAINER)
    assert "language" not in stranger.get(reverse("review:global-preferences")).text
    global_client, user = member(project, None)
    user.user_permissions.add(Permission.objects.get(codename="review_global_memory"))
    page = global_client.get(reverse("review:global-preferences")).text
    assert "Approve" in page
    approve = reverse("review:global-preference-approve", args=[proposal.pk])
    assert global_client.post(approve).status_code == 302
    assert Preference.objects.get(pk=proposal.pk).status == "approved"
    # In force: every project's people read it.
    assert "language" in stranger.get(reverse("review:global-preferences")).text
    assert global_client.post(approve.replace(str(proposal.pk), "999999")).status_code == 404


def test_a_projects_preferences_page_lists_its_users_preferences(world):
    project = world["a"]["project"]
    preferences.set_preference(
        project=project, user_ref="ana", key="tone", value={"short": True}, actor=Actor.system("t")
    )
    preferences.set_preference(
        project=world["b"]["project"],
        user_ref="ana",
        key="b-only",
        value=1,
        actor=Actor.system("t"),
    )
    viewer, _ = member(project, Role.VIEWER)
    page = viewer.get(reverse("review:preferences", args=[project.slug]) + "?user=ana").text
    assert "{&quot;short&quot;: true}" in page
    assert "b-only" not in page
