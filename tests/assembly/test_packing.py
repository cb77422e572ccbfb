"""Fitting memories into a token budget: zero overruns, for any input (hypothesis)."""

from __future__ import annotations

from functools import partial

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assembly.budget import DEFAULT_SHARES, Share, allocate
from assembly.packing import LODS, Candidate, Weights, pack, rank
from assembly.render import PROMPT_PARTS, render_prompt
from memories.tokens import SUPPORTED_ENCODINGS, count_tokens

texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=300
).filter(lambda t: t.strip())

candidates = st.lists(
    st.builds(
        Candidate,
        id=st.integers(1, 10**6),
        source=st.sampled_from(["run", "project", "global"]),
        type=st.sampled_from(["pattern", "warning", "learning", "context"]),
        content=texts,
        summary=texts,
        tag_match=st.booleans(),
        text_relevance=st.floats(0, 1),
        confidence=st.floats(0, 1),
        relevance_score=st.floats(0, 1),
        recency=st.floats(0, 1),
    ),
    max_size=25,
    unique_by=lambda c: c.id,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    memories=candidates,
    budget=st.integers(0, 600),
    limit=st.integers(1, 15),
    lod=st.sampled_from(LODS),
    encoding=st.sampled_from(SUPPORTED_ENCODINGS),
    parts=st.none() | st.dictionaries(st.sampled_from(PROMPT_PARTS), texts, max_size=4),
    ids=st.booleans(),
)
def test_the_rendered_text_never_exceeds_the_budget(
    memories, budget, limit, lod, encoding, parts, ids
):
    """With ``ids`` too: a line that names its memory's id counts the id in the budget."""
    render = (lambda section: section) if parts is None else partial(render_prompt, parts)
    packed = pack(
        rank(memories, Weights()), budget=budget, limit=limit, lod=lod, encoding=encoding,
        render=render, ids=ids,
    )  # fmt: skip
    assert count_tokens(packed.text, encoding) == packed.total_tokens <= budget
    assert len(packed.chosen) <= limit
    assert len(packed.chosen) + len(packed.dropped) == len(memories)
    assert len({c.line for c in packed.chosen}) == len(packed.chosen)  # no line twice
    for c in packed.chosen:
        label = (
            f"{c.scored.candidate.type} #{c.scored.candidate.id}"
            if ids
            else c.scored.candidate.type
        )
        assert c.line.startswith(f"- [{label}] ")
        assert c.line in packed.text
    again = pack(
        rank(list(reversed(memories)), Weights()), budget=budget, limit=limit, lod=lod,
        encoding=encoding, render=render, ids=ids,
    )  # fmt: skip
    assert again.text == packed.text  # deterministic, whatever order the rows came in


shares = st.fixed_dictionaries(
    {
        name: st.one_of(
            st.builds(Share.fixed, st.integers(0, 2000)),
            st.builds(Share.range, st.floats(0, 1), st.floats(0, 1)),
            st.builds(Share.auto, st.floats(0, 5)),
        )
        for name in ("run", "project", "global")
    }
)


@settings(max_examples=300, deadline=None)
@given(
    pool=st.integers(0, 50_000),
    shares=shares,
    demand=st.fixed_dictionaries({n: st.integers(0, 60_000) for n in ("run", "project", "global")}),
)
def test_the_shares_always_add_up_to_the_pool(pool, shares, demand):
    allocation = allocate(pool, shares, demand)
    assert sum(allocation.values()) == pool
    assert all(tokens >= 0 for tokens in allocation.values())


def test_default_split_is_40_40_20_and_unused_shares_flow_on():
    everyone = {"run": 10**6, "project": 10**6, "global": 10**6}
    assert allocate(1000, DEFAULT_SHARES, everyone) == {"run": 400, "project": 400, "global": 200}
    no_run = {"run": 0, "project": 10**6, "global": 10**6}
    assert allocate(1000, DEFAULT_SHARES, no_run) == {"run": 0, "project": 667, "global": 333}
    small_project = {"run": 0, "project": 100, "global": 10**6}
    assert allocate(1000, DEFAULT_SHARES, small_project) == {
        "run": 0,
        "project": 100,
        "global": 900,
    }


def test_fixed_and_range_shares():
    shares = {"run": Share.fixed(300), "project": Share.range(0.1, 0.2), "global": Share.auto(1)}
    everyone = {"run": 10**6, "project": 10**6, "global": 10**6}
    assert allocate(1000, shares, everyone) == {"run": 300, "project": 200, "global": 500}


def test_prompt_sections_follow_the_seed_order():
    prompt = render_prompt(
        {
            "outputFormat": "JSON",
            "retryDigest": "Last try failed on lint.",
            "constraints": "No new dependencies.",
            "readFirst": "README.md",
            "workspace": "/repo",
            "task": "Fix the bug.",
            "role": "You are a careful engineer.",
        },
        "## Memories\n- [warning] Full test suite required when modifying src/core/.",
    )
    titles = [line for line in prompt.splitlines() if line.startswith("## ")]
    assert titles == [
        "## Role",
        "## Task",
        "## Workspace",
        "## Read First",
        "## Memories",
        "## Constraints",
        "## Retry Digest",
        "## Output Format",
    ]


def test_tag_matches_come_first_then_score():
    def make(id, tag_match, confidence):
        return Candidate(id, "project", "pattern", "c", "s", tag_match, 0.0, confidence, 1.0, 0.0)

    ranked = rank([make(1, False, 1.0), make(2, True, 0.3), make(3, True, 0.9)], Weights())
    assert [s.candidate.id for s in ranked] == [3, 2, 1]


def test_adaptive_fits_more_memories_than_atomic_and_keeps_the_best_in_full():
    long = "Long explanation. " + "detail " * 60
    memories = [
        Candidate(i, "project", "learning", long, f"Short {i}.", True, 0.0, 1 - i / 100, 1.0, 0.0)
        for i in range(1, 8)
    ]
    ranked = rank(memories, Weights())
    atomic = pack(ranked, budget=250, limit=10, lod="atomic", encoding="o200k_base")
    adaptive = pack(ranked, budget=250, limit=10, lod="adaptive", encoding="o200k_base")
    assert len(adaptive.chosen) > len(atomic.chosen)
    assert adaptive.chosen[0].detail == "atomic"
    assert adaptive.chosen[-1].detail == "macro"


def test_the_same_line_is_never_rendered_twice():
    def make(id, content, summary):
        return Candidate(
            id, "project", "pattern", content, summary, False, 0.0, 1 - id / 10, 1.0, 0.0
        )

    memories = [
        make(1, "Use UTC. Always.", "Use UTC."),
        make(2, "Use UTC. Seen again.", "Use UTC."),
    ]
    packed = pack(
        rank(memories, Weights()), budget=500, limit=10, lod="macro", encoding="o200k_base"
    )
    assert packed.text == "## Memories\n- [pattern] Use UTC."
    assert [(s.candidate.id, reason) for s, reason in packed.dropped] == [(2, "duplicate")]
