"""The review pages refuse a disguised secret as the API does: the form or the message names
the kind of secret, and nothing is stored."""

from __future__ import annotations

import pytest
from django.urls import reverse

from knowledge.models import MemoryPair
from memories.models import Memory, MemoryEvent

pytestmark = pytest.mark.django_db

AWS_SPLIT = "AKIAIOSF ODNN7EXAMPLE"  # an AWS access key split by one space
GITHUB_HIDDEN = "ghp_Xb7kQ2mP9w\u2060R4tY6uI8oL1zC3vN5aS0dF7gH2"  # with a word joiner


def test_an_inline_edit_with_a_disguised_secret_says_what_and_changes_nothing(
    reviewer_client, project, make_memory
):
    memory = make_memory(project=project, content="keep me")
    response = reviewer_client.post(
        reverse("review:memory-edit", args=[memory.pk]),
        {"content": f"Use {AWS_SPLIT} for the bucket", "tags": "", "type": "pattern"},
    )
    assert response.status_code == 200
    assert "AWS Access Key" in response.text
    assert AWS_SPLIT not in response.text.split("<textarea", 1)[0]  # only the form holds it
    memory.refresh_from_db()
    assert memory.content == "keep me"
    assert not memory.events.filter(action="updated").exists()


def test_a_decision_with_a_secret_in_its_reason_is_refused(reviewer_client, project, make_memory):
    first = make_memory(project=project, content="Calls to the ledger time out after 10 s.")
    second = make_memory(project=project, content="Calls to the ledger time out after 30 s.")
    pair, _ = MemoryPair.objects.get_or_create(
        first=first, second=second, defaults={"project": project, "kind": "conflict"}
    )
    events = MemoryEvent.objects.count()
    response = reviewer_client.post(
        reverse("review:conflict-decide", args=[pair.pk]),
        {"action": "dismiss", "reason": f"token {GITHUB_HIDDEN}"},
        follow=True,
    )
    assert "GitHub Token" in response.text
    assert "ghp_" not in response.text
    pair.refresh_from_db()
    assert (pair.status, pair.reason) == ("open", "")
    assert MemoryEvent.objects.count() == events
    assert Memory.objects.filter(active=True).count() == 2
