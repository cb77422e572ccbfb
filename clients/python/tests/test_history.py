"""HistoryWindow: every policy keeps the window within its cap (real tiktoken counts)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memory_layer_client import HistoryWindow, Message
from memory_layer_client.tokens import count_tokens

TURNS = st.lists(
    st.tuples(
        st.sampled_from(["user", "assistant", "tool"]),
        st.text(alphabet="abcdefghij klmnop.!?,é", min_size=1, max_size=120),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(TURNS, st.integers(8, 120), st.sampled_from(["fifo", "summarize", "semantic"]))
def test_the_window_never_exceeds_its_cap(turns, cap, policy) -> None:
    window = HistoryWindow(cap=cap, policy=policy)
    for role, content in turns:
        window.add(role, content)
        rendered = "\n".join(m.render() for m in window.window("abc klm"))
        assert count_tokens(rendered) <= cap


def test_fifo_keeps_the_newest() -> None:
    window = HistoryWindow(cap=30, policy="fifo")
    for n in range(20):
        window.add("user", f"message number {n}")
    kept = [m.content for m in window.window()]
    assert kept[-1] == "message number 19"
    assert kept == [f"message number {n}" for n in range(20 - len(kept), 20)]
    assert len(kept) < 20


def test_summarize_folds_the_oldest_with_the_callers_summarizer() -> None:
    seen: list[list[str]] = []

    def summarizer(messages: list[Message]) -> str:
        seen.append([m.content for m in messages])
        return f"{len(messages)} earlier"

    window = HistoryWindow(cap=40, policy="summarize", summarizer=summarizer)
    for n in range(12):
        window.add("user", f"Step {n} of the migration is done. More detail follows here.")
    kept = window.window()
    assert kept[0].role == "summary"
    assert kept[0].content.endswith("earlier")
    assert kept[-1].content.startswith("Step 11")
    assert seen  # the caller's summarizer was used


def test_the_default_summary_is_extractive() -> None:
    window = HistoryWindow(cap=45, policy="summarize")
    for n in range(8):
        window.add("user", f"Fact {n} holds. A long explanation that the summary leaves out.")
    summary = window.window()[0]
    assert summary.role == "summary"
    assert "Fact 0 holds." in summary.content
    assert "explanation" not in summary.content


def test_semantic_keeps_what_matters_to_the_intent_and_the_latest() -> None:
    window = HistoryWindow(cap=40, policy="semantic")
    window.add("user", "The staging database password rotates every Friday.")
    for n in range(10):
        window.add("assistant", f"Unrelated chatter about lunch option {n}.")
    window.add("user", "Now fix the login page.")
    kept = [m.content for m in window.window("when does the database password rotate")]
    assert "The staging database password rotates every Friday." in kept
    assert kept[-1] == "Now fix the login page."
    assert kept.index("The staging database password rotates every Friday.") == 0  # in order


@pytest.mark.parametrize("cap", [0, -5, 1.5])
def test_the_cap_is_a_positive_number_of_tokens(cap) -> None:
    with pytest.raises(ValueError, match="positive number of tokens"):
        HistoryWindow(cap=cap)


def test_the_window_saves_to_the_service_and_resumes_from_it(service) -> None:
    import uuid

    from memory_layer_client import MemoryLayerClient

    with MemoryLayerClient(service.url, service.key) as memory:
        window = HistoryWindow(cap=40, policy="fifo")
        assert window.save(memory, agent_id="a", user_id="u") is None  # nothing to save yet
        for turn in range(6):
            window.add("user" if turn % 2 == 0 else "assistant", f"turn {turn} " + "word " * 8)
        conversation_id = window.save(memory, agent_id="a", user_id=f"u-{uuid.uuid4().hex[:6]}")
        assert conversation_id is not None
        # Everything was saved, though the window itself kept only what fits its cap.
        assert memory.get_conversation(conversation_id)["messageCount"] == 6
        assert len(window.messages) < 6
        assert window.save(memory) == conversation_id  # nothing new: nothing written

        resumed = HistoryWindow.resume(memory, conversation_id, cap=1000)
        assert [m.content.split()[1] for m in resumed.messages] == [str(t) for t in range(6)]
        resumed.add("user", "one more")
        assert resumed.save(memory) == conversation_id
        stored = memory.get_conversation(conversation_id)
        assert stored["messageCount"] == 7
        assert stored["messages"][-1] == {
            **stored["messages"][-1],
            "position": 6,
            "content": "one more",
        }


@pytest.mark.anyio
async def test_the_window_saves_and_resumes_through_the_async_client(service) -> None:
    import uuid

    from memory_layer_client import AsyncMemoryLayerClient

    async with AsyncMemoryLayerClient(service.url, service.key) as memory:
        window = HistoryWindow(cap=200)
        window.add("user", "hello")
        conversation_id = await window.save_async(
            memory, agent_id="a", user_id=f"u-{uuid.uuid4().hex[:6]}"
        )
        assert conversation_id is not None
        resumed = await HistoryWindow.resume_async(memory, conversation_id, cap=200)
        assert [(m.role, m.content) for m in resumed.messages] == [("user", "hello")]
