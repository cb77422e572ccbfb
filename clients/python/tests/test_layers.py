"""The memory layers: hooks within their timeouts, on_init_error, recall modes, and the
view's order and budget split (property-tested, with real tiktoken counts)."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memory_layer_client import (
    LayerInitError,
    LayerOutput,
    LayerStack,
    MemoryLayer,
    assemble_view,
)
from memory_layer_client.budget import Share, allocate
from memory_layer_client.tokens import count_tokens


class Slow(MemoryLayer):
    """A layer whose hooks take ``delay`` seconds (or fail)."""

    def __init__(self, id: str, delay: float = 0.0, fail: bool = False, **options: Any) -> None:
        super().__init__(id, **options)
        self.delay, self.fail = delay, fail
        self.calls: list[str] = []
        self.stored: list[str] = []

    async def _act(self, hook: str) -> None:
        self.calls.append(hook)
        await asyncio.sleep(self.delay)
        if self.fail:
            raise RuntimeError(f"{hook} broke")

    async def init(self) -> None:
        await self._act("init")

    async def recall(self, intent: str, **context: Any) -> LayerOutput:
        await self._act("recall")
        return LayerOutput(f"{self.id} knows {len(self.stored)} things about {intent}")

    async def store(self, fact: str) -> None:
        await self._act("store")
        self.stored.append(fact)

    async def on_complete(self, outcome: str) -> None:
        await self._act("on_complete")


@pytest.mark.anyio
async def test_a_late_hook_is_skipped_with_a_diagnostic() -> None:
    layer = Slow("slow", delay=0.2, timeouts={"recall": 0.05, "store": 0.05})
    output = await layer.run_recall("deploys")
    assert output.text == ""
    await layer.run_store("x")
    assert [(d.hook, d.kind) for d in layer.diagnostics] == [
        ("recall", "timeout"),
        ("store", "timeout"),
    ]
    assert "0.05 s" in layer.diagnostics[0].message


@pytest.mark.anyio
async def test_a_failing_hook_is_skipped_and_others_go_on() -> None:
    broken, fine = Slow("broken", fail=True), Slow("fine")
    stack = LayerStack([broken, fine])
    broken.on_init_error = "disable"
    await stack.init()
    view = await stack.recall("cache", 100)
    assert view.text == "fine knows 0 things about cache"
    assert ("broken", "init", "disabled") in [(d.layer, d.hook, d.kind) for d in stack.diagnostics]
    await stack.complete("succeeded")
    assert "on_complete" not in broken.calls  # a disabled layer is not called again
    assert "on_complete" in fine.calls


@pytest.mark.anyio
@pytest.mark.parametrize("cause", ["timeout", "error"])
async def test_init_follows_on_init_error(cause: str) -> None:
    options: dict[str, Any] = {"timeouts": {"init": 0.05}} if cause == "timeout" else {}
    thrower = Slow("t", delay=0.2 if cause == "timeout" else 0, fail=cause == "error", **options)
    with pytest.raises(LayerInitError, match="layer 't' could not start"):
        await thrower.run_init()
    quiet = Slow(
        "q",
        delay=0.2 if cause == "timeout" else 0,
        fail=cause == "error",
        on_init_error="disable",
        **options,
    )
    await quiet.run_init()
    assert quiet.disabled
    assert (await quiet.run_recall("x")).text == ""


@pytest.mark.anyio
async def test_eventual_recall_is_served_from_the_cache_and_refreshed_after_store() -> None:
    eventual = Slow("e", delay=0.05, recall_mode="eventual")
    atomic = Slow("a")
    assert (await eventual.run_recall("db")).text == "e knows 0 things about db"  # fills it
    await eventual.run_store("fact")
    # At once, from the cache (the refresh after the store is still under way).
    assert (await eventual.run_recall("db")).text == "e knows 0 things about db"
    await eventual.settled()
    assert (await eventual.run_recall("db")).text == "e knows 1 things about db"  # refreshed
    assert eventual.calls.count("recall") == 2  # the fill and one refresh
    await atomic.run_recall("db")
    await atomic.run_store("fact")
    assert (await atomic.run_recall("db")).text == "a knows 1 things about db"
    assert atomic.calls.count("recall") == 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"budget": -1}, "0 or more"),
        ({"budget": {"min": 10}}, "exactly 'min' and 'max'"),
        ({"budget": {"min": 50, "max": 10}}, "above its max"),
        ({"budget": "some"}, "number of tokens"),
        ({"timeouts": {"recal": 1}}, "no hook 'recal'"),
        ({"timeouts": {"recall": math.nan}}, "positive number of seconds"),
        ({"on_init_error": "ignore"}, "'throw' or 'disable'"),
        ({"recall_mode": "lazy"}, "'atomic' or 'eventual'"),
    ],
)
def test_a_wrong_configuration_says_what_is_wrong(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MemoryLayer("x", **options)


# --- the view --------------------------------------------------------------------------------

WORDS = st.lists(
    st.sampled_from(["alpha", "beta", "gamma", "ünï", "ship", "it", "42", "src/db.py", "—"]),
    min_size=0,
    max_size=40,
).map(" ".join)
BUDGETS = st.one_of(
    st.just("auto"),
    st.integers(0, 200),
    st.tuples(st.integers(0, 100), st.integers(0, 100)).map(
        lambda t: {"min": min(t), "max": max(t)}
    ),
)
LAYERS = st.lists(
    st.tuples(st.integers(-3, 3), BUDGETS, st.lists(WORDS, min_size=1, max_size=4)),
    min_size=1,
    max_size=5,
)


def build(spec: list[tuple[int, Any, list[str]]]) -> list[tuple[MemoryLayer, LayerOutput]]:
    return [
        (MemoryLayer(f"layer-{i}", slot=slot, budget=budget), LayerOutput("\n".join(lines)))
        for i, (slot, budget, lines) in enumerate(spec)
    ]


@settings(max_examples=80, deadline=None)
@given(LAYERS, st.integers(0, 400))
def test_the_view_never_has_more_tokens_than_the_budget(spec: Any, budget: int) -> None:
    view = assemble_view(build(spec), budget)
    assert count_tokens(view.text) == view.tokens <= budget


@settings(max_examples=80, deadline=None)
@given(LAYERS, st.integers(0, 400))
def test_the_view_orders_sections_by_slot(spec: Any, budget: int) -> None:
    view = assemble_view(build(spec), budget)
    assert [s.slot for s in view.sections] == sorted(s.slot for s in view.sections)
    assert view.text == "\n\n".join(s.text for s in view.sections if s.text)


@settings(max_examples=80, deadline=None)
@given(LAYERS, st.integers(0, 400))
def test_the_split_conserves_the_pool_as_the_service_does(spec: Any, budget: int) -> None:
    view = assemble_view(build(spec), budget)
    shown = view.sections
    if shown:
        separators = count_tokens("\n\n") * (len(shown) - 1)
        assert sum(s.allocated for s in shown) == max(budget - separators, 0)
    for section in view.sections:
        assert section.tokens <= section.allocated


def test_the_split_is_the_services_allocation() -> None:
    layers = [
        (MemoryLayer("fixed", slot=0, budget=30), LayerOutput("word " * 200)),
        (MemoryLayer("range", slot=1, budget={"min": 10, "max": 40}), LayerOutput("more " * 200)),
        (MemoryLayer("auto", slot=2), LayerOutput("rest " * 200)),
    ]
    view = assemble_view(layers, 200)
    pool = 200 - 2 * count_tokens("\n\n")
    expected = allocate(
        pool,
        {
            "fixed": Share.fixed(30),
            "range": Share.range(10 / pool, 40 / pool),
            "auto": Share.auto(1),
        },
        {layer.id: count_tokens(out.text) for layer, out in layers},
    )
    assert {s.layer: s.allocated for s in view.sections} == expected


def test_a_nan_budget_is_refused_and_infinity_caps_only_the_layers_own_maximum() -> None:
    layers = [
        (MemoryLayer("fixed", budget=5), LayerOutput("one two three four five six seven eight")),
        (MemoryLayer("auto", slot=1), LayerOutput("word " * 500)),
    ]
    with pytest.raises(ValueError, match="NaN"):
        assemble_view(layers, math.nan)
    with pytest.raises(ValueError, match="0 or more"):
        assemble_view(layers, -1)
    view = assemble_view(layers, math.inf)
    by_layer = {s.layer: s for s in view.sections}
    assert by_layer["auto"].text == layers[1][1].text  # uncapped
    assert by_layer["fixed"].tokens <= 5
    assert by_layer["fixed"].truncated
