"""The entity review page: memories and neighbours, relationships added and removed by
reviewers, and the link from a memory's page."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from knowledge.models import Entity, EntityLink, EntityTerm
from tests.review.conftest import HTMX

pytestmark = pytest.mark.django_db

RETRY = [
    "RetryQueue in src/billing/queue.py retries Stripe webhooks",
    "src/billing/tasks.py enqueues into RetryQueue",
    "RetryQueue drops Stripe events after 5 attempts (src/billing/retry.py)",
]


@pytest.fixture
def retry(project, make_memory):
    EntityTerm.objects.create(project=project, name="Stripe")
    memories = [make_memory(project=project, content=content) for content in RETRY]
    make_memory(project=project, content="OrderBook keeps the orders")
    return memories


def entity(project, name):
    return Entity.objects.get(project=project, key=name.lower())


def page(project, name):
    return reverse("review:entity", args=[entity(project, name).pk])


def test_the_page_shows_memories_and_links_to_neighbours(reviewer_client, project, retry):
    response = reviewer_client.get(page(project, "RetryQueue"))
    assert response.status_code == 200
    html = response.content.decode()
    for memory in retry:
        assert reverse("review:memory", args=[memory.pk]) in html
    assert f'href="{page(project, "Stripe")}"' in html
    assert f'href="{page(project, "src/billing/queue.py")}"' in html
    assert "defined_in" in html
    assert "csrfmiddlewaretoken" in html  # a reviewer gets the forms


def test_the_memory_page_links_to_its_entities(reviewer_client, project, retry):
    html = reviewer_client.get(reverse("review:memory", args=[retry[0].pk])).content.decode()
    assert f'href="{page(project, "RetryQueue")}"' in html
    assert f'href="{page(project, "Stripe")}"' in html


def test_a_reviewer_adds_and_removes_a_relationship(reviewer_client, project, retry):
    retry_queue, order = entity(project, "RetryQueue"), entity(project, "OrderBook")
    links = reverse("review:entity-link", args=[retry_queue.pk])
    response = reviewer_client.post(
        links, {"action": "add", "name": "orderbook", "type": "imports"}
    )
    assert response.status_code == 302
    link = EntityLink.objects.get()
    assert (link.type, link.removed) == ("imports", False)
    html = reviewer_client.get(page(project, "RetryQueue")).content.decode()
    assert f'href="{page(project, "OrderBook")}"' in html
    assert "set by a reviewer" in html
    stripe = entity(project, "Stripe")
    response = reviewer_client.post(
        links, {"action": "remove", "other": stripe.pk}, HTTP_HX_TARGET="neighbours", **HTMX
    )
    assert response.status_code == 200
    assert f'href="{page(project, "Stripe")}"' not in response.content.decode()
    assert "<html" not in response.content.decode()  # the part only
    assert EntityLink.objects.filter(removed=True).count() == 1
    assert order.pk in EntityLink.objects.filter(removed=False).values_list(
        "second", flat=True
    ) or (order.pk in EntityLink.objects.values_list("first", flat=True))


def test_bad_relationship_input_says_what_to_fix(reviewer_client, project, retry):
    links = reverse("review:entity-link", args=[entity(project, "RetryQueue").pk])
    response = reviewer_client.post(links, {"action": "add", "name": "Nowhere"}, **HTMX)
    assert response.status_code == 400
    assert "No entity named &#x27;Nowhere&#x27; in this project" in response.content.decode()
    response = reviewer_client.post(links, {"action": "add", "name": "RetryQueue"}, **HTMX)
    assert "not its own neighbour" in response.content.decode()
    response = reviewer_client.post(
        links, {"action": "add", "name": "Stripe", "type": "owns"}, **HTMX
    )
    assert "Use one of: defined_in, imports, mentions." in response.content.decode()
    assert not EntityLink.objects.exists()


def test_a_viewer_reads_but_may_not_change(reader_client, project, retry):
    html = reader_client.get(page(project, "RetryQueue")).content.decode()
    assert "Not related" not in html
    links = reverse("review:entity-link", args=[entity(project, "RetryQueue").pk])
    response = reader_client.post(links, {"action": "add", "name": "Stripe", "type": "mentions"})
    assert response.status_code == 403
    assert not EntityLink.objects.exists()


def test_no_role_is_a_404(client, plain_user, project, retry):
    client.force_login(plain_user)
    assert client.get(page(project, "RetryQueue")).status_code == 404
    links = reverse("review:entity-link", args=[entity(project, "RetryQueue").pk])
    assert client.post(links, {"action": "remove", "other": "1"}).status_code == 404


def test_the_form_needs_csrf(reviewer, project, retry):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(reviewer)
    links = reverse("review:entity-link", args=[entity(project, "RetryQueue").pk])
    assert strict.post(links, {"action": "add", "name": "Stripe"}).status_code == 403


def test_the_page_costs_a_fixed_number_of_queries(
    reviewer_client, project, retry, make_memory, django_assert_max_num_queries
):
    for n in range(20):
        make_memory(project=project, content=f"RetryQueue feeds Worker{n}Pool")
    reviewer_client.get(page(project, "RetryQueue"))
    with django_assert_max_num_queries(12):
        response = reviewer_client.get(page(project, "RetryQueue"), {"depth": 2})
    assert response.status_code == 200
