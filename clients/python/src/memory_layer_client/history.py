"""``HistoryWindow``: the short-term memory of a conversation, within a token cap.

Messages are kept as they come; what the window gives is always within ``cap`` tokens
(tiktoken, on the rendered text), pruned by one of three policies:

* ``fifo``: the oldest messages go first;
* ``summarize``: the oldest messages are folded into one summary message, written by the
  ``summarizer`` the caller passes (a model call, say) or, by default, extractively: the
  first sentence of each folded message;
* ``semantic``: the messages most relevant to the current intent stay (words they share
  with it, rarer words weighing more), the latest always, in their order.

The window can persist to the service and resume from it: ``save`` (or ``save_async``)
writes the messages added since the last save as a conversation (the first time) or appended
to it; ``HistoryWindow.resume`` (or ``resume_async``) reads a saved conversation back into a
new window, which then saves onto the same conversation.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from memory_layer_client.layers import LayerOutput, MemoryLayer, fit
from memory_layer_client.tokens import DEFAULT_ENCODING, count_tokens

if TYPE_CHECKING:
    from memory_layer_client.client import AsyncMemoryLayerClient, MemoryLayerClient
    from memory_layer_client.types import ConversationDetail

Policy = Literal["fifo", "summarize", "semantic"]
_WORD = re.compile(r"[a-z0-9_]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Message:
    role: str
    content: str

    def render(self) -> str:
        return f"{self.role}: {self.content}"


def first_sentences(messages: Sequence[Message]) -> str:
    """The default summary: the first sentence of each message, in order."""
    return " ".join(
        _SENTENCE.split(m.content.strip(), maxsplit=1)[0] for m in messages if m.content
    )


class HistoryWindow(MemoryLayer):
    """The conversation so far as a memory layer: ``add`` (or ``store``) messages, and
    ``recall`` renders what fits in ``cap`` tokens."""

    def __init__(
        self,
        id: str = "history",
        *,
        cap: int,
        policy: Policy = "fifo",
        summarizer: Callable[[Sequence[Message]], str] | None = None,
        encoding: str = DEFAULT_ENCODING,
        **options: Any,
    ) -> None:
        if isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0:
            raise ValueError("cap is a positive number of tokens")
        options.setdefault("scope", "conversation")
        options.setdefault("budget", cap)
        super().__init__(id, **options)
        if policy not in ("fifo", "summarize", "semantic"):
            raise ValueError("policy is 'fifo', 'summarize' or 'semantic'")
        self.cap = cap
        self.policy = policy
        self.summarizer = summarizer or first_sentences
        self.encoding = encoding
        self.messages: list[Message] = []
        self.summary: Message | None = None
        # The conversation this window persists to, once saved or resumed, and the messages
        # added since (whatever the policy has pruned from the window since).
        self.conversation_id: int | None = None
        self.unsaved: list[Message] = []

    # --- keeping ---------------------------------------------------------------------------

    def add(self, role: str, content: str) -> None:
        message = Message(role, content)
        self.unsaved.append(message)
        self._keep(message)

    def _keep(self, message: Message) -> None:
        self.messages.append(message)
        if self.policy == "summarize":
            self._fold()
        elif self.policy == "fifo":
            while len(self.messages) > 1 and self._tokens(self.messages) > self.cap:
                self.messages.pop(0)

    async def store(self, role: str, content: str) -> None:
        self.add(role, content)

    # --- persisting --------------------------------------------------------------------------

    def save(
        self, client: MemoryLayerClient, *, agent_id: str = "", user_id: str = "", title: str = ""
    ) -> int | None:
        """Write the messages added since the last save to the service: as a new
        conversation of ``agent_id`` with ``user_id`` the first time, appended to it after.
        Returns the conversation's id (None while nothing was ever saved)."""
        if not self.unsaved:
            return self.conversation_id
        pending = list(self.unsaved)
        if self.conversation_id is None:
            saved = client.save_conversation(agent_id, user_id, pending, title=title)
            self.conversation_id = saved["id"]
        else:
            client.append_messages(self.conversation_id, pending)
        del self.unsaved[: len(pending)]
        return self.conversation_id

    async def save_async(
        self,
        client: AsyncMemoryLayerClient,
        *,
        agent_id: str = "",
        user_id: str = "",
        title: str = "",
    ) -> int | None:
        """``save`` for asyncio code."""
        if not self.unsaved:
            return self.conversation_id
        pending = list(self.unsaved)
        if self.conversation_id is None:
            saved = await client.save_conversation(agent_id, user_id, pending, title=title)
            self.conversation_id = saved["id"]
        else:
            await client.append_messages(self.conversation_id, pending)
        del self.unsaved[: len(pending)]
        return self.conversation_id

    @classmethod
    def resume(
        cls, client: MemoryLayerClient, conversation_id: int, **options: Any
    ) -> HistoryWindow:
        """A new window (``options`` as for the constructor: ``cap``, ``policy`` ...) holding
        a saved conversation's messages, in order, that saves onto it."""
        window = cls(**options)
        page: ConversationDetail = client.get_conversation(conversation_id)
        window._resumed(page)
        while page["nextAfter"] is not None:
            page = client.get_conversation(conversation_id, after=page["nextAfter"])
            window._resumed(page)
        window.conversation_id = int(conversation_id)
        return window

    @classmethod
    async def resume_async(
        cls, client: AsyncMemoryLayerClient, conversation_id: int, **options: Any
    ) -> HistoryWindow:
        """``resume`` for asyncio code."""
        window = cls(**options)
        page: ConversationDetail = await client.get_conversation(conversation_id)
        window._resumed(page)
        while page["nextAfter"] is not None:
            page = await client.get_conversation(conversation_id, after=page["nextAfter"])
            window._resumed(page)
        window.conversation_id = int(conversation_id)
        return window

    def _resumed(self, page: ConversationDetail) -> None:
        for message in page["messages"]:
            self._keep(Message(message["role"], message["content"]))

    def _tokens(self, messages: Sequence[Message]) -> int:
        return count_tokens(self._render(messages), self.encoding)

    @staticmethod
    def _render(messages: Sequence[Message]) -> str:
        return "\n".join(m.render() for m in messages)

    def _fold(self) -> None:
        """Fold the oldest messages into the summary until the window fits."""

        def window() -> list[Message]:
            return ([self.summary] if self.summary else []) + self.messages

        while len(self.messages) > 1 and self._tokens(window()) > self.cap:
            folded = [self.summary] if self.summary else []
            folded.append(self.messages.pop(0))
            text = self.summarizer(folded)
            room = max(self.cap - self._tokens(self.messages) - 4, 0)
            text = fit(text, room, self.encoding)
            self.summary = Message("summary", text) if text else None

    # --- giving ----------------------------------------------------------------------------

    def window(self, intent: str = "") -> list[Message]:
        """The messages the window gives now, within the cap."""
        if self.policy == "semantic":
            kept = self._relevant(intent)
        else:
            kept = ([self.summary] if self.summary else []) + self.messages
        while kept and self._tokens(kept) > self.cap:
            if len(kept) == 1:
                only = kept[0]
                room = self.cap - count_tokens(f"{only.role}: ", self.encoding)
                return [Message(only.role, fit(only.content, max(room, 0), self.encoding))]
            kept.pop(0)
        return kept

    def _relevant(self, intent: str) -> list[Message]:
        if not self.messages:
            return []
        latest = self.messages[-1]
        documents = [Counter(_WORD.findall(m.content.lower())) for m in self.messages]
        held = Counter(word for doc in documents for word in doc)
        wanted = set(_WORD.findall(intent.lower()))
        total = len(self.messages)

        def score(doc: Counter[str]) -> float:
            return sum(math.log(1 + total / held[w]) for w in wanted if w in doc)

        ranked = sorted(
            range(total - 1),
            key=lambda i: (score(documents[i]), i),  # ties: the newer
            reverse=True,
        )
        chosen = {total - 1}
        for index in ranked:
            trial = sorted(chosen | {index})
            if self._tokens([self.messages[i] for i in trial]) <= self.cap:
                chosen.add(index)
        return [self.messages[i] for i in sorted(chosen)] if chosen else [latest]

    async def recall(self, intent: str = "", **context: Any) -> LayerOutput:
        return LayerOutput(self._render(self.window(intent)))
