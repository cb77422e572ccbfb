"""A conversation distilled into candidate memories: pending, inactive until a reviewer
approves them, never approved on their own; the rule that picks lasting sentences."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from assembly import selection
from memories import services
from memories.models import Memory, MemoryEvent
from people import conversations, distill
from people.conversations import NewMessage
from people.models import Message


@pytest.mark.parametrize(
    "sentence",
    [
        "Always answer in German.",
        "Please never push to main directly.",
        "Don't use emojis in commit messages.",
        "I prefer short answers with code first.",
        "We use pnpm, not npm.",
        "Our staging database is called db-stage-2.",
        "From now on, run the linter before each commit.",
        "Make sure the changelog is updated with every release.",
    ],
)
def test_lasting_instructions_and_facts_are_kept(sentence):
    assert distill.lasting(sentence) == [sentence]


@pytest.mark.parametrize(
    "sentence",
    [
        "Can you always answer in German?",  # a question
        "Always.",  # too short
        "Don't deploy today, the freeze is on.",  # of the moment
        "For now, skip the flaky test.",
        "The build is red.",  # a remark, not an instruction or a standing fact
        "Thanks, that works!",
        "My test failed again.",
    ],
)
def test_questions_remarks_and_things_of_the_moment_are_not(sentence):
    assert distill.lasting(sentence) == []


def test_only_the_users_sentences_are_read_each_once():
    messages = [
        Message(role="user", content="Hi! Always answer in German. Thanks."),
        Message(role="assistant", content="Always, I will answer in German."),
        Message(role="user", content="Always answer in German."),
    ]
    assert distill.candidates(messages) == ["Always answer in German."]


@pytest.fixture
def conversation(project):
    made, _ = conversations.conversation_save(
        project=project,
        user_id="ana",
        agent_id="a",
        messages=[
            NewMessage("user", "Hi. Always run the full test suite when touching src/core."),
            NewMessage("assistant", "Understood. Never skip it."),
            NewMessage("user", "Can you fix the login bug? We use pytest, not unittest."),
        ],
    )
    return made


@pytest.mark.django_db
def test_distilled_memories_are_pending_inactive_and_say_where_they_came_from(
    project, conversation, reviewer_actor
):
    result = distill.conversation_distill(
        project=project, conversation=conversation, actor=reviewer_actor
    )
    contents = [m.content for m in result.memories]
    assert contents == [
        "Always run the full test suite when touching src/core.",
        "We use pytest, not unittest.",
    ]
    for memory in Memory.objects.filter(pk__in=[m.pk for m in result.memories]):
        # A reviewer's own call proposes too: approval is a separate act.
        assert (memory.type, memory.source, memory.review_status) == (
            "learning",
            "learning",
            "pending",
        )
        assert memory.active is False
        assert memory.approved_by is None
        reason = MemoryEvent.objects.get(memory=memory, action="deactivated").reason
        assert f"conversation {conversation.pk}" in reason


@pytest.mark.django_db
def test_no_agent_is_given_a_distilled_memory_before_a_reviewer_approves_it(
    project, conversation, reviewer_actor, system_actor
):
    result = distill.conversation_distill(
        project=project,
        conversation=conversation,
        actor=system_actor,
        learnings=["Deploys of src/core need a second reviewer."],
    )
    (memory,) = result.memories

    def given() -> list[int]:
        chosen = selection.memories_for_task(project=project, write_scope=[], limit=10)
        return [m.pk for m in chosen]

    assert memory.pk not in given()
    services.memory_approve(memory=Memory.objects.get(pk=memory.pk), actor=reviewer_actor)
    approved = Memory.objects.get(pk=memory.pk)
    assert (approved.active, approved.review_status, approved.confidence) == (
        True,
        "approved",
        1.0,
    )
    assert memory.pk in given()


@pytest.mark.django_db
def test_given_learnings_are_checked_and_known_ones_not_proposed_again(
    project, conversation, system_actor
):
    first = distill.conversation_distill(
        project=project, conversation=conversation, actor=system_actor, learnings=["Use UTC."]
    )
    again = distill.conversation_distill(
        project=project, conversation=conversation, actor=system_actor, learnings=["Use UTC."]
    )
    assert len(first.memories) == 1
    assert (again.memories, again.known) == ([], ["Use UTC."])
    with pytest.raises(ValidationError) as refused:
        distill.conversation_distill(
            project=project, conversation=conversation, actor=system_actor, learnings=["  "]
        )
    assert "learnings[0]" in refused.value.message_dict
