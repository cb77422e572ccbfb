"""The review lists read a page through an index in its order, at any depth and for every
sort, never the project's memories whole: the plans of their statements say so."""

from __future__ import annotations

import json

import pytest
from django.core import signing
from django.urls import reverse

from memories.keyset import Order
from memories.models import Memory
from review.forms import SORTS
from tests.plans import memories_scans, nodes, page_statement, plan_without_sorting

pytestmark = pytest.mark.django_db


def _walks_an_index(plan: dict) -> None:
    kinds = {node["Node Type"] for node in nodes(plan)}
    assert "Sort" not in kinds, json.dumps(plan, indent=1)
    scans = memories_scans(plan)
    assert scans, json.dumps(plan, indent=1)
    assert all(scan["Node Type"] != "Seq Scan" for scan in scans), json.dumps(plan, indent=1)


@pytest.mark.parametrize("sort", list(SORTS))
def test_the_memories_list_walks_an_index_for_every_sort(
    reviewer_client, project, make_memory, sort
):
    memories = [make_memory(project=project) for _ in range(4)]
    order = Order.of(Memory, SORTS[sort])
    after = signing.dumps([order.label, order.position(memories[1])], salt="review-keyset")
    url = reverse("review:memories", args=[project.slug])
    for path in (f"{url}?sort={sort}", f"{url}?sort={sort}&type=warning&after={after}"):
        statement = page_statement(reviewer_client, path)
        _walks_an_index(plan_without_sorting(statement))
    assert " > (" in statement or " < (" in statement  # the second page starts after a row


@pytest.mark.parametrize("order", ["newest", "least-confident"])
@pytest.mark.parametrize("every_project", [False, True])
def test_the_queue_walks_an_index_for_each_order(
    reviewer_client, project, make_memory, order, every_project
):
    for _ in range(4):
        make_memory(project=project)
    url = (
        reverse("review:queue")
        if every_project
        else reverse("review:project-queue", args=[project.slug])
    )
    _walks_an_index(plan_without_sorting(page_statement(reviewer_client, url + f"?order={order}")))
