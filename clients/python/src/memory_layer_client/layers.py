"""The slot-based memory layer of an agent loop, and the view it assembles.

A ``MemoryLayer`` is one source of what a model is told: the project's long-term memory
(``ProjectMemoryLayer``), the conversation so far (``HistoryWindow``), or anything an agent
writes. Each layer has a ``slot`` (where its text goes in the view), a ``scope`` (a label),
a ``budget`` (tokens: a number, ``{"min": .., "max": ..}`` or ``"auto"``) and five hooks a
subclass overrides, all asynchronous:

* ``init()`` when the run starts; ``recall(intent, **context)`` before each model call;
  ``store(...)`` after it, with what is worth keeping; ``on_complete(outcome)`` when the
  run ends; ``dispose()`` last.

A ``LayerStack`` runs the hooks of its layers, each within its own timeout
(``timeouts={"recall": 0.5}``): a hook that is late or fails is skipped with a
``Diagnostic``, except ``init``, which follows ``on_init_error``: ``"throw"`` raises
``LayerInitError``, ``"disable"`` turns the layer off for the run (its hooks are not called
again, it adds nothing to the view). ``recall_mode="eventual"`` serves a recall from the
layer's last answer to the same question and refreshes it in the background after each
``store``; ``"atomic"`` (the default) asks the layer every time.

``assemble_view`` orders the layers' texts by slot and splits a total token budget across
them as the service splits a context's budget across its sources (``budget.allocate``):
the pool is conserved, a NaN budget is refused, an infinite one caps nothing but the
layers' own maximums. Tokens are counted with tiktoken on the final text: the view never
has more than the budget.
"""

from __future__ import annotations

import asyncio
import logging
import math
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from memory_layer_client.budget import Share, allocate
from memory_layer_client.client import AsyncMemoryLayerClient
from memory_layer_client.tokens import DEFAULT_ENCODING, count_tokens, get_encoding
from memory_layer_client.types import MemoryType, Outcome

logger = logging.getLogger(__name__)

HOOKS = ("init", "recall", "store", "on_complete", "dispose")
Budget = int | Mapping[str, int] | Literal["auto"]
SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Diagnostic:
    """A hook that was skipped: late (``timeout``) or failed (``error``), or a layer turned
    off after its ``init`` failed (``disabled``)."""

    layer: str
    hook: str
    kind: Literal["timeout", "error", "disabled"]
    message: str


@dataclass
class LayerOutput:
    """What a layer's recall gives: its text, and the ids of what it holds (memories)."""

    text: str
    ids: list[int] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


class LayerInitError(RuntimeError):
    """A layer with ``on_init_error="throw"`` could not start."""


def _check_budget(budget: Any) -> None:
    if budget == "auto":
        return
    if isinstance(budget, bool) or not isinstance(budget, int | Mapping):
        raise ValueError(
            f"budget must be a number of tokens, {{min, max}} or 'auto', not {budget!r}"
        )
    if isinstance(budget, int):
        if budget < 0:
            raise ValueError(f"budget must be 0 or more tokens, not {budget}")
        return
    if set(budget) != {"min", "max"}:
        raise ValueError(f"a budget range has exactly 'min' and 'max', not {sorted(budget)}")
    low, high = budget["min"], budget["max"]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (low, high)):
        raise ValueError("a budget range's min and max are whole numbers of tokens, 0 or more")
    if low > high:
        raise ValueError(f"a budget range's min ({low}) is above its max ({high})")


class MemoryLayer:
    """One source of the view; override the hooks you need (all default to nothing)."""

    def __init__(
        self,
        id: str,
        *,
        slot: int = 0,
        scope: str = "project",
        budget: Budget = "auto",
        timeouts: Mapping[str, float] | None = None,
        on_init_error: Literal["throw", "disable"] = "throw",
        recall_mode: Literal["atomic", "eventual"] = "atomic",
    ) -> None:
        if not id:
            raise ValueError("a layer needs an id")
        _check_budget(budget)
        for hook, seconds in (timeouts or {}).items():
            if hook not in HOOKS:
                raise ValueError(f"no hook {hook!r} to time: use one of {', '.join(HOOKS)}")
            if not isinstance(seconds, int | float) or not math.isfinite(seconds) or seconds <= 0:
                raise ValueError(f"the timeout of {hook} must be a positive number of seconds")
        if on_init_error not in ("throw", "disable"):
            raise ValueError("on_init_error is 'throw' or 'disable'")
        if recall_mode not in ("atomic", "eventual"):
            raise ValueError("recall_mode is 'atomic' or 'eventual'")
        self.id = id
        self.slot = slot
        self.scope = scope
        self.budget: Budget = budget
        self.timeouts = dict(timeouts or {})
        self.on_init_error = on_init_error
        self.recall_mode = recall_mode
        self.disabled = False
        self.diagnostics: list[Diagnostic] = []
        self._cache: dict[str, LayerOutput] = {}
        self._last_recall: tuple[str, dict[str, Any]] | None = None
        self._refresh: asyncio.Task[None] | None = None

    # --- the hooks -------------------------------------------------------------------------

    async def init(self) -> None:
        """The run starts."""

    async def recall(self, intent: str, **context: Any) -> LayerOutput | str:
        """What the model should be told for ``intent``."""
        return LayerOutput("")

    async def store(self, *args: Any, **kwargs: Any) -> Any:
        """Something worth keeping happened."""
        return None

    async def on_complete(self, outcome: str, *, used_memory_ids: Sequence[int] = ()) -> None:
        """The run ended with ``outcome``; ``used_memory_ids``: the memories the agent used,
        when it said."""

    async def dispose(self) -> None:
        """Let go of what the layer holds."""

    # --- running the hooks -----------------------------------------------------------------

    async def _run(self, hook: str, call: Callable[[], Awaitable[Any]]) -> tuple[bool, Any]:
        """Run one hook within its timeout: (True, its value), or (False, None) with a
        diagnostic when it was late or failed. ``init`` follows ``on_init_error``."""
        seconds = self.timeouts.get(hook)
        try:
            if seconds is None:
                return True, await call()
            return True, await asyncio.wait_for(call(), seconds)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            late = isinstance(error, TimeoutError)
            message = (
                f"{hook} took longer than {seconds} s and was skipped"
                if late
                else f"{hook} failed and was skipped: {type(error).__name__}: {error}"
            )
            if hook == "init":
                if self.on_init_error == "throw":
                    raise LayerInitError(f"layer {self.id!r} could not start: {message}") from error
                self.disabled = True
                message = f"{message}; the layer is off for this run"
            self._diagnose(hook, "timeout" if late else "error", message)
            if hook == "init":
                self._diagnose(hook, "disabled", f"layer {self.id!r} is off for this run")
            return False, None

    def _diagnose(
        self, hook: str, kind: Literal["timeout", "error", "disabled"], text: str
    ) -> None:
        self.diagnostics.append(Diagnostic(self.id, hook, kind, text))
        logger.warning("memory layer %s: %s", self.id, text)

    async def run_init(self) -> None:
        await self._run("init", self.init)

    async def run_recall(self, intent: str, **context: Any) -> LayerOutput:
        if self.disabled:
            return LayerOutput("")
        key = repr((intent, sorted(context.items())))
        self._last_recall = (intent, context)
        if self.recall_mode == "eventual" and key in self._cache:
            return self._cache[key]
        done, value = await self._run("recall", lambda: self.recall(intent, **context))
        if not done:
            return self._cache.get(key, LayerOutput(""))
        output = value if isinstance(value, LayerOutput) else LayerOutput(str(value or ""))
        self._cache[key] = output
        return output

    async def run_store(self, *args: Any, **kwargs: Any) -> Any:
        if self.disabled:
            return None
        _, value = await self._run("store", lambda: self.store(*args, **kwargs))
        if self.recall_mode == "eventual" and self._last_recall is not None:
            self._refresh = asyncio.create_task(self._refresh_cache())
        return value

    async def _refresh_cache(self) -> None:
        assert self._last_recall is not None
        intent, context = self._last_recall
        key = repr((intent, sorted(context.items())))
        done, value = await self._run("recall", lambda: self.recall(intent, **context))
        if done:
            self._cache[key] = value if isinstance(value, LayerOutput) else LayerOutput(str(value))

    async def settled(self) -> None:
        """Wait for a background refresh of an eventual recall to finish."""
        if self._refresh is not None:
            await asyncio.gather(self._refresh, return_exceptions=True)

    async def run_on_complete(self, outcome: str, used_memory_ids: Sequence[int] = ()) -> None:
        if not self.disabled:
            if used_memory_ids:
                await self._run(
                    "on_complete",
                    lambda: self.on_complete(outcome, used_memory_ids=used_memory_ids),
                )
            else:
                await self._run("on_complete", lambda: self.on_complete(outcome))

    async def run_dispose(self) -> None:
        if self._refresh is not None and not self._refresh.done():
            self._refresh.cancel()
        await self._run("dispose", self.dispose)


# --- the view --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    layer: str
    slot: int
    allocated: float  # tokens; math.inf for an uncapped layer
    tokens: int
    truncated: bool
    text: str


@dataclass(frozen=True)
class View:
    text: str
    tokens: int
    sections: list[Section]
    diagnostics: list[Diagnostic] = field(default_factory=list)


def _share(budget: Budget, pool: int) -> Share:
    if budget == "auto":
        return Share.auto(1.0)
    if isinstance(budget, int):
        return Share.fixed(budget)
    assert isinstance(budget, Mapping)
    if pool <= 0:
        return Share.fixed(0)
    return Share.range(budget["min"] / pool, budget["max"] / pool)


def _cap(budget: Budget) -> float:
    if budget == "auto":
        return math.inf
    if isinstance(budget, int):
        return float(budget)
    assert isinstance(budget, Mapping)
    return float(budget["max"])


def fit(text: str, tokens: float, encoding: str = DEFAULT_ENCODING) -> str:
    """``text`` cut to at most ``tokens``: whole lines from the start, then, if the first
    line alone is too long, its first tokens."""
    if tokens == math.inf or count_tokens(text, encoding) <= tokens:
        return text
    if tokens <= 0:
        return ""
    kept: list[str] = []
    for line in text.split("\n"):
        if count_tokens("\n".join([*kept, line]), encoding) > tokens:
            break
        kept.append(line)
    if kept:
        return "\n".join(kept)
    codec = get_encoding(encoding)
    ids = codec.encode(text, disallowed_special=())
    size = int(tokens)
    while size > 0:
        cut = codec.decode(ids[:size]).rstrip("\ufffd")
        if count_tokens(cut, encoding) <= tokens:
            return cut
        size -= 1
    return ""


def assemble_view(
    outputs: Sequence[tuple[MemoryLayer, LayerOutput | str]],
    total_budget: float,
    *,
    encoding: str = DEFAULT_ENCODING,
) -> View:
    """The layers' texts in slot order, within ``total_budget`` tokens, split across them
    as the service splits a context's budget (``budget.allocate``)."""
    if isinstance(total_budget, bool) or not isinstance(total_budget, int | float):
        raise ValueError(f"the total budget is a number of tokens, not {total_budget!r}")
    if math.isnan(total_budget):
        raise ValueError("the total budget is NaN: give a number of tokens (or math.inf)")
    if total_budget < 0:
        raise ValueError(f"the total budget must be 0 or more tokens, not {total_budget}")
    ordered = sorted(
        (
            (layer, out if isinstance(out, LayerOutput) else LayerOutput(out))
            for layer, out in outputs
        ),
        key=lambda pair: (pair[0].slot, pair[0].id),
    )
    ordered = [(layer, out) for layer, out in ordered if not layer.disabled and out.text]
    diagnostics = [d for layer, _ in outputs for d in layer.diagnostics]
    if not ordered:
        return View("", 0, [], diagnostics)
    demand = {layer.id: count_tokens(out.text, encoding) for layer, out in ordered}
    if math.isinf(total_budget):
        allocated = {
            layer.id: min(float(demand[layer.id]), _cap(layer.budget)) for layer, _ in ordered
        }
    else:
        # The separators between sections come out of the pool first.
        pool = int(total_budget) - count_tokens(SEPARATOR, encoding) * (len(ordered) - 1)
        pool = max(pool, 0)
        shares = {layer.id: _share(layer.budget, pool) for layer, _ in ordered}
        allocated = {k: float(v) for k, v in allocate(pool, shares, demand).items()}
    texts = {layer.id: fit(out.text, allocated[layer.id], encoding) for layer, out in ordered}
    while True:
        text = SEPARATOR.join(texts[layer.id] for layer, _ in ordered if texts[layer.id])
        total = count_tokens(text, encoding)
        if total <= total_budget:
            break
        # Tokens can merge across a join: take a line more off the last section that has one.
        last = next(layer.id for layer, _ in reversed(ordered) if texts[layer.id])
        texts[last] = fit(texts[last], count_tokens(texts[last], encoding) - 1, encoding)
    sections = [
        Section(
            layer=layer.id,
            slot=layer.slot,
            allocated=allocated[layer.id],
            tokens=count_tokens(texts[layer.id], encoding),
            truncated=texts[layer.id] != out.text,
            text=texts[layer.id],
        )
        for layer, out in ordered
    ]
    return View(text, total, sections, diagnostics)


class LayerStack:
    """The layers of one agent: runs each hook across them and assembles the view."""

    def __init__(self, layers: Sequence[MemoryLayer]) -> None:
        ids = [layer.id for layer in layers]
        if len(set(ids)) != len(ids):
            raise ValueError(f"layer ids must be unique: {ids}")
        self.layers = list(layers)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [d for layer in self.layers for d in layer.diagnostics]

    async def init(self) -> None:
        for layer in self.layers:
            await layer.run_init()

    async def recall(self, intent: str, total_budget: float, **context: Any) -> View:
        outputs = await asyncio.gather(
            *(layer.run_recall(intent, **context) for layer in self.layers)
        )
        return assemble_view(list(zip(self.layers, outputs, strict=True)), total_budget)

    async def store(self, layer_id: str, *args: Any, **kwargs: Any) -> Any:
        layer = next((layer for layer in self.layers if layer.id == layer_id), None)
        if layer is None:
            raise ValueError(f"no layer {layer_id!r}")
        return await layer.run_store(*args, **kwargs)

    async def complete(self, outcome: str, *, used_memory_ids: Sequence[int] = ()) -> None:
        """Every layer's on_complete; ``used_memory_ids``: the memories the agent used (the
        service's ranking learns from them)."""
        for layer in self.layers:
            await layer.run_on_complete(outcome, used_memory_ids)

    async def dispose(self) -> None:
        for layer in self.layers:
            await layer.run_dispose()


class ProjectMemoryLayer(MemoryLayer):
    """A project's memory in the service, on the lifecycle of a run: ``init`` starts the
    run, ``recall`` asks for the context of the task, ``store`` remembers (pending review),
    ``on_complete`` reports the outcome, so the confidence of what the run was given moves
    with its result."""

    def __init__(
        self,
        id: str = "project-memory",
        *,
        client: AsyncMemoryLayerClient | None = None,
        url: str | None = None,
        api_key: str | None = None,
        project: str | None = None,
        external_id: str | None = None,
        task_title: str = "",
        write_scope: Sequence[str] = (),
        default_tokens: int = 2000,
        **options: Any,
    ) -> None:
        super().__init__(id, **options)
        self._owns_client = client is None
        self.client = client or AsyncMemoryLayerClient(url, api_key, project=project)
        # Without an id of the caller's, each layer is a run of its own (an agent loop run
        # twice starts two runs); with one, starting again resumes that run.
        self.external_id = external_id or f"run-{uuid.uuid4().hex}"
        self.task_title = task_title
        self.write_scope = list(write_scope)
        self.default_tokens = default_tokens
        self.run_id: int | None = None

    def _tokens(self, budget: int | None) -> int:
        if budget is not None:
            return budget
        if isinstance(self.budget, int):
            return self.budget
        if isinstance(self.budget, Mapping):
            return int(self.budget["max"])
        return self.default_tokens

    async def init(self) -> None:
        run = await self.client.start_run(
            self.external_id, task_title=self.task_title, write_scope=self.write_scope
        )
        self.run_id = run["id"]

    async def recall(
        self, intent: str, *, entities: Sequence[str] = (), budget: int | None = None, **_: Any
    ) -> LayerOutput:
        context = await self.client.context(
            self._tokens(budget),
            write_scope=self.write_scope,
            intent=intent,
            entities=list(entities),
            run_id=self.run_id,
        )
        return LayerOutput(
            text=context["text"],
            ids=[item["id"] for item in context["items"]],
            meta={"metadata": context["metadata"], "dropped": context["dropped"]},
        )

    async def store(
        self,
        type: MemoryType,
        content: str,
        *,
        tags: Sequence[str] = (),
        supersedes: Sequence[int] = (),
    ) -> Any:
        return await self.client.create_memory(
            type, content, tags=tags, supersedes=supersedes, run_id=self.run_id
        )

    async def on_complete(  # type: ignore[override]
        self, outcome: Outcome, *, used_memory_ids: Sequence[int] = ()
    ) -> None:
        if self.run_id is not None:
            await self.client.report_outcome(
                self.run_id, outcome, used_memory_ids=used_memory_ids or None
            )

    async def dispose(self) -> None:
        if self._owns_client:
            await self.client.aclose()
