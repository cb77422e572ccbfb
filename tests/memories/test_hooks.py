"""The store's one announcement: sent after a change commits, never for a rolled-back one,
to every subscriber even when one of them fails."""

from __future__ import annotations

import logging

import pytest
from django.db import transaction

from memories import hooks, services
from memories.actors import Actor
from memories.hooks import memories_changed

pytestmark = pytest.mark.django_db
SYSTEM = Actor.system("tests")


def test_a_change_is_announced_once_it_commits(
    project, make_memory, heard, django_capture_on_commit_callbacks
):
    memory = make_memory(project=project)
    with django_capture_on_commit_callbacks() as pending:
        services.memories_set_pinned(memory_ids=[memory.pk], pinned=True, actor=SYSTEM)
        assert heard == []  # not before the commit
    for callback in pending:
        callback()
    (change,) = heard
    assert change.project_ids == {project.pk}
    assert change.changes == {memory.pk: {"pinned": [False, True]}}


def test_a_new_memory_is_announced_by_its_project_only(
    project, heard, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        services.memory_create(
            project=project, type="pattern", content="Use UTC.", source="human", actor=SYSTEM
        )
    (change,) = heard
    assert change.project_ids == {project.pk}
    assert change.changes == {}


def test_a_rolled_back_change_is_never_announced(
    project, make_memory, heard, django_capture_on_commit_callbacks
):
    memory = make_memory(project=project)

    def pin_then_give_up() -> None:
        with transaction.atomic():
            services.memories_set_pinned(memory_ids=[memory.pk], pinned=True, actor=SYSTEM)
            raise RuntimeError("the caller gives up")

    with (
        django_capture_on_commit_callbacks(execute=True) as pending,
        pytest.raises(RuntimeError),
    ):
        pin_then_give_up()
    assert pending == []
    assert heard == []


def test_a_failing_subscriber_is_logged_and_the_others_still_hear(
    project, heard, caplog, django_capture_on_commit_callbacks
):
    def broken(**kwargs):
        raise ValueError("subscriber bug")

    memories_changed.connect(broken, dispatch_uid="tests.broken")
    try:
        with (
            caplog.at_level(logging.ERROR, logger="memories.hooks"),
            django_capture_on_commit_callbacks(execute=True),
        ):
            hooks.announce([project.pk])
    finally:
        memories_changed.disconnect(dispatch_uid="tests.broken")
    assert [c.project_ids for c in heard] == [{project.pk}]
    assert "subscriber bug" in caplog.text


def test_the_cache_and_the_consolidation_queue_subscribe():
    receivers = {r[0][0] for r in memories_changed.receivers}
    assert {"assembly.cache", "policies.consolidation"} <= receivers
