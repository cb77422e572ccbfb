"""A user's preferences in the context: their own section first, inside the budget (zero
overruns for any input), within their share when memories want the room, and given what the
memories leave."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assembly import preferences as user_preferences
from assembly.packing import LODS, Candidate, Weights, rank
from assembly.render import PREFERENCES_TITLE, PROMPT_PARTS, preference_line
from memories.tokens import SUPPORTED_ENCODINGS, count_tokens
from tests.api.conftest import client_with_key, url
from tests.assembly.test_packing import candidates, texts

offers = st.lists(
    st.builds(
        lambda key, value: user_preferences.Offered(
            key, "project", "", preference_line(key, value)
        ),
        st.from_regex(r"[a-z][a-z0-9_.]{0,20}", fullmatch=True),
        st.one_of(texts, st.integers(), st.lists(texts, max_size=3)),
    ),
    max_size=12,
    unique_by=lambda o: o.key,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    offered=offers,
    memories=candidates,
    budget=st.integers(0, 600),
    share=st.floats(0, 1),
    lod=st.sampled_from(LODS),
    encoding=st.sampled_from(SUPPORTED_ENCODINGS),
    parts=st.none() | st.dictionaries(st.sampled_from(PROMPT_PARTS), texts, max_size=3),
)
def test_preferences_and_memories_never_exceed_the_budget(
    offered, memories, budget, share, lod, encoding, parts
):
    fitted = user_preferences.fit(
        offered, rank(memories, Weights()), budget=budget, share=share, encoding=encoding,
        prompt=parts, limit=10, lod=lod,
    )  # fmt: skip
    text = fitted.packed.text
    assert count_tokens(text, encoding) == fitted.packed.total_tokens <= budget
    for offer in fitted.given:
        assert offer.line in text
    if fitted.given:
        head = text.index(PREFERENCES_TITLE)
        assert all(text.index(o.line) > head for o in fitted.given)
        if fitted.packed.chosen:
            assert head < text.index("## Memories")  # preferences come first
    # Given in their own order, whatever was handed back.
    assert fitted.given == [o for o in offered if o in fitted.given]


def _offer(key, words):
    return user_preferences.Offered(key, "project", "", preference_line(key, " ".join(words)))


def test_preferences_take_at_most_their_share_when_memories_want_the_room():
    many = [
        Candidate(i, "project", "pattern", f"memory number {i} " + "word " * 20, "", True,
                  0.0, 1.0, 1.0, 1.0)
        for i in range(1, 40)
    ]  # fmt: skip
    offered = [_offer(f"k{i}", ["value"] * 15) for i in range(10)]
    fitted = user_preferences.fit(
        offered, rank(many, Weights()), budget=300, share=0.2, encoding="o200k_base",
        limit=40, lod="atomic",
    )  # fmt: skip

    def count(text):
        return count_tokens(text, "o200k_base")

    first = user_preferences.first(offered, ceiling=60, cost=count, fits=lambda s: count(s) <= 300)
    assert 0 < count(user_preferences.section(first)) <= fitted.ceiling == 60
    assert fitted.given[: len(first)] == first
    # The memories got the rest: all but less than one more of their lines.
    memories = count("\n".join(["## Memories", *(c.line for c in fitted.packed.chosen)]))
    longest = max(c.tokens for c in fitted.packed.chosen)
    assert memories >= 300 - 60 - longest - 2
    assert len(fitted.given) < len(offered)
    assert fitted.packed.total_tokens <= 300


def test_what_the_memories_leave_goes_back_to_the_preferences():
    offered = [_offer(f"k{i}", ["value"] * 15) for i in range(10)]
    fitted = user_preferences.fit(
        offered, [], budget=300, share=0.2, encoding="o200k_base", limit=10, lod="atomic"
    )
    # No memory wants the room: more than the share, up to the whole budget.
    assert count_tokens(user_preferences.section(fitted.given), "o200k_base") > fitted.ceiling
    assert fitted.packed.total_tokens <= 300


# --- through the service ---------------------------------------------------------------------


@pytest.fixture
def agent_and_memories(project, make_memory):
    for index in range(30):
        make_memory(project=project, content=f"Invoices rule {index}: " + "lock the row " * 6)
    return client_with_key(project)


def _context(agent, project, **body):
    answer = agent.post(url(project, "context"), {"tokenBudget": 300, **body}, format="json")
    assert answer.status_code == 200, answer.json()
    return answer.json()


@pytest.mark.django_db
def test_a_context_for_a_user_gives_their_preferences_first(agent_and_memories, project):
    agent = agent_and_memories
    agent.put(
        url(project, "users", "u1", "preferences", "language"), {"value": "de"}, format="json"
    )
    agent.put(
        url(project, "users", "u1", "preferences", "style"),
        {"value": {"tone": "short", "emoji": False}, "category": "style"},
        format="json",
    )
    body = _context(agent, project, intent="invoices", userId="u1")
    text = body["text"]
    assert text.startswith(
        "## Preferences\n- language: de\n"
        '- style: {"tone": "short", "emoji": false}\n\n## Memories\n'
    )
    assert count_tokens(text, "o200k_base") == body["metadata"]["totalTokens"] <= 300
    assert [(p["key"], p["rank"], p["reason"]) for p in body["preferences"]] == [
        ("language", 1, None),
        ("style", 2, None),
    ]
    coverage = body["metadata"]["sourceCoverage"]["preferences"]
    assert (coverage["candidates"], coverage["chosen"], coverage["allocated"]) == (2, 2, 60)
    # Another user, or none: no preferences section.
    assert "## Preferences" not in _context(agent, project, intent="invoices", userId="u2")["text"]
    plain = _context(agent, project, intent="invoices")
    assert plain["preferences"] == []
    assert "preferences" not in plain["metadata"]["sourceCoverage"]


@pytest.mark.django_db
def test_a_changed_preference_is_in_the_next_context_at_once(
    agent_and_memories, project, django_capture_on_commit_callbacks
):
    agent = agent_and_memories
    where = url(project, "users", "u1", "preferences", "language")
    with django_capture_on_commit_callbacks(execute=True):
        agent.put(where, {"value": "de"}, format="json")
    assert "- language: de" in _context(agent, project, userId="u1")["text"]
    assert _context(agent, project, userId="u1")["metadata"]["cacheHit"]
    with django_capture_on_commit_callbacks(execute=True):
        agent.put(where, {"value": "fr"}, format="json")
    again = _context(agent, project, userId="u1")
    assert "- language: fr" in again["text"]
    assert not again["metadata"]["cacheHit"]
    with django_capture_on_commit_callbacks(execute=True):
        agent.delete(where)
    assert "## Preferences" not in _context(agent, project, userId="u1")["text"]


@pytest.mark.django_db
def test_the_policy_sets_the_preferences_share(agent_and_memories, project):
    agent = agent_and_memories
    for index in range(8):
        agent.put(
            url(project, "users", "u1", "preferences", f"rule{index}"),
            {"value": "always answer with " + "care " * 10},
            format="json",
        )
    small = _context(agent, project, intent="invoices", userId="u1")
    project.policy.share_preferences = 0.6
    project.policy.save()
    large = _context(agent, project, intent="invoices", userId="u1")
    given = [sum(p["rank"] is not None for p in b["preferences"]) for b in (small, large)]
    assert 0 < given[0] < given[1]
    assert all(b["metadata"]["totalTokens"] <= 300 for b in (small, large))
    assert {p["reason"] for p in small["preferences"] if p["rank"] is None} == {"budget"}


@pytest.mark.django_db
def test_a_bad_user_id_in_a_context_request_is_a_400(agent_and_memories, project):
    answer = agent_and_memories.post(
        url(project, "context"), {"tokenBudget": 300, "userId": "two words"}, format="json"
    )
    assert answer.status_code == 400
    assert (
        "userId" in answer.json()["error"]["fields"]
        or "user_id" in answer.json()["error"]["fields"]
    )
