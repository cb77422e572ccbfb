"""Conversations found by words (the full-text index) and by meaning (the messages'
embeddings), ranked, each with its matching messages; the ranking itself is pure."""

from __future__ import annotations

import pytest

from people import conversation_search, conversations
from people.conversation_search import Scored, rank
from people.conversations import NewMessage


def save(project, user, *texts):
    conversation, _ = conversations.conversation_save(
        project=project,
        user_id=user,
        agent_id="a",
        messages=[NewMessage("user", text) for text in texts],
    )
    return conversation


@pytest.mark.django_db
def test_words_find_the_conversation_and_its_matching_message(project, other_project):
    deploy = save(project, "ana", "Hello there", "The deploy failed on the migration step")
    save(project, "ana", "Lunch plans for Friday")
    save(other_project, "ana", "The deploy of another project")
    hits = conversation_search.conversations_search(project=project, q="deploy migration")
    assert [hit.conversation.pk for hit in hits] == [deploy.pk]
    (message, scored) = hits[0].messages[0]
    assert message.content == "The deploy failed on the migration step"
    assert scored.words == 1.0
    assert hits[0].score == scored.score > 0


@pytest.mark.django_db
def test_meaning_finds_what_shares_no_word_with_the_query(project):
    weather = save(project, "ana", "Will it rain this afternoon?", "It is sunny and warm outside")
    save(project, "ana", "Please refactor the billing module")
    hits = conversation_search.conversations_search(project=project, q="weather")
    assert hits
    assert hits[0].conversation.pk == weather.pk
    assert hits[0].messages[0][1].words == 0.0
    assert hits[0].messages[0][1].meaning >= conversation_search.MEANING_MIN


@pytest.mark.django_db
def test_a_search_is_limited_to_the_user_when_named(project):
    save(project, "ana", "The invoice total is wrong")
    bo = save(project, "bo", "The invoice total is wrong again")
    hits = conversation_search.conversations_search(project=project, q="invoice", user_id="bo")
    assert [hit.conversation.pk for hit in hits] == [bo.pk]


@pytest.mark.django_db
def test_a_search_takes_four_queries_at_most(project, django_assert_max_num_queries):
    for i in range(5):
        save(project, "ana", f"The cache eviction bug number {i}", "Thanks")
    with django_assert_max_num_queries(4):
        hits = conversation_search.conversations_search(project=project, q="cache eviction")
    assert len(hits) == 5


def test_rank_puts_messages_matching_both_ways_first_and_keeps_the_best_three():
    words = [(1, 10, 0.2), (2, 20, 0.1), (3, 20, 0.05), (4, 20, 0.05), (5, 20, 0.05)]
    meaning = [(1, 10, 0.9), (6, 30, 0.2), (2, 20, 0.5)]  # 0.2 is below the threshold
    ranked = rank(words, meaning, limit=10)
    assert [conversation for conversation, _, _ in ranked] == [10, 20]
    assert ranked[0][1] == Scored(1, 10, words=1.0, meaning=0.9).score
    assert [s.message_id for s in ranked[1][2]] == [2, 5, 4]  # best three, ties newer first
    assert rank(words, meaning, limit=1) == ranked[:1]
    assert rank([], [], limit=5) == []
