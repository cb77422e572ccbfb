"""Two writers of one new preference at once, on real, separate PostgreSQL connections: the
second waits on the first's insert, then changes the row it made; nothing is lost and the
history has both."""

from __future__ import annotations

import pytest
from django.db import transaction

from memories.actors import Actor
from people import preferences
from people.models import Preference, PreferenceEvent
from tests.concurrency import start_waiting

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_second_creator_of_a_preference_changes_the_firsts(project):
    results = []
    with transaction.atomic():
        first = preferences.set_preference(
            project=project, user_ref="ana", key="language", value="de", actor=Actor.system("a")
        )
        second = start_waiting(
            lambda: results.append(
                preferences.set_preference(
                    project=project,
                    user_ref="ana",
                    key="language",
                    value="fr",
                    actor=Actor.system("b"),
                )
            ),
            waiting=1,
        )
        assert not second.done  # it waits on the first insert of the same key
    second.join()
    assert first.created
    assert [(w.created, w.changed) for w in results] == [(False, True)]
    assert Preference.objects.get().value == "fr"
    events = PreferenceEvent.objects.order_by("id").values_list("actor_label", "changes")
    assert list(events) == [
        ("system:a", {"value": [None, "de"], "category": [None, ""]}),
        ("system:b", {"value": ["de", "fr"]}),
    ]
