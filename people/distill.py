"""A conversation turned into candidate memories for review (DESIGN.md 6f).

Each candidate becomes a memory of type and source ``learning``, pending review, through the
store's one writer (memories.services), and is then set inactive with the conversation named
in its history: an agent is never given it before a reviewer approves it (an approval sets
it active at confidence 1.0; a rejection leaves it out for good). Nothing here approves.

The candidates are the texts the caller gives, or, with none, what the user said that reads
as lasting (``lasting``): the rule is pure, and stated there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db import transaction

from knowledge.claims import split
from memories import services
from memories.actors import Actor
from memories.models import Memory, MemoryType, Project, Source
from memories.text import clean_content, content_hash
from people.models import Conversation, Message, Role

LEARNINGS_MAX = 20
# The user's messages read for lasting sentences: the newest ones.
MESSAGES_READ = 500
WORDS_MIN, WORDS_MAX = 3, 60

_LEAD = re.compile(
    r"^(?:(?:please|also|and|note|ok|okay|so)[,:]?\s+)*"
    r"(?:always|never|don'?t|do\s+not|make\s+sure|remember(?:\s+that|\s+to)?|avoid|prefer"
    r"|only\s+use|use\s+only"
    r"|i\s+(?:always|never|prefer|'?d\s+prefer|would\s+prefer|like|dislike|don'?t\s+like"
    r"|do\s+not\s+like|want|use)"
    r"|we\s+(?:always|never|use|prefer|don'?t|do\s+not)"
    r"|(?:our|my)\s+(?:\S+\s+){0,5}?(?:is|are|uses|runs|lives|live)"
    r")\b",
    re.IGNORECASE,
)
_STANDING = re.compile(
    r"\b(?:from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|by\s+default|every\s+time)\b",
    re.IGNORECASE,
)
_MOMENT = re.compile(
    r"\b(?:today|tonight|tomorrow|yesterday|right\s+now|for\s+now|this\s+time"
    r"|at\s+the\s+moment|just\s+now)\b",
    re.IGNORECASE,
)


def lasting(text: str) -> list[str]:
    """The sentences of a user's message that read as a lasting instruction or fact.

    A sentence is kept when it is not a question (it does not end in ``?``), has 3 to 60
    words, says nothing of the moment (today, tomorrow, right now, for now, this time, at the
    moment, just now...), and either

    * starts (after please, also, ok...) with an instruction that lasts: always, never,
      don't, do not, make sure, remember, avoid, prefer, only use; or with a standing
      preference or habit: I always / never / prefer / like / dislike / want / use, we
      always / never / use / prefer / don't; or with a fact of ours: "our (thing) is / are /
      uses / runs / lives", "my (thing) is ..."; or
    * says it lasts: from now on, going forward, in (the) future, by default, every time.
    """
    kept = []
    for sentence in split(text):
        words = sentence.text.strip().rstrip(" .!")
        count = len(words.split())
        if sentence.text.rstrip().endswith("?") or not WORDS_MIN <= count <= WORDS_MAX:
            continue
        if _MOMENT.search(words):
            continue
        if _LEAD.match(words) or _STANDING.search(words):
            kept.append(sentence.text.strip())
    return kept


def candidates(messages: Sequence[Message]) -> list[str]:
    """The lasting sentences of the user's messages, in the conversation's order, each once."""
    seen: dict[str, None] = {}
    for message in messages:
        if message.role == Role.USER:
            for sentence in lasting(message.content):
                seen.setdefault(sentence, None)
    return list(seen)[:LEARNINGS_MAX]


@dataclass
class Distilled:
    memories: list[Memory] = field(default_factory=list)
    # Texts the project already has as a memory, word for word: not proposed again.
    known: list[str] = field(default_factory=list)


@transaction.atomic
def conversation_distill(
    *,
    project: Project,
    conversation: Conversation,
    actor: Actor,
    learnings: Sequence[str] | None = None,
) -> Distilled:
    """Propose ``learnings`` (or, without them, the lasting sentences the user said) as
    pending, inactive memories of the project, for a reviewer to approve or reject."""
    if learnings is None:
        messages = list(
            Message.objects.filter(conversation=conversation, role=Role.USER)
            .order_by("-position")
            .only("role", "content", "position")[:MESSAGES_READ]
        )
        texts = candidates(messages[::-1])
    else:
        if len(learnings) > LEARNINGS_MAX:
            raise ValidationError({"learnings": f"At most {LEARNINGS_MAX} a request."})
        texts = []
        for index, text in enumerate(learnings):
            try:
                texts.append(clean_content(text))
            except ValidationError as invalid:
                raise ValidationError({f"learnings[{index}]": invalid.messages}) from None
    cleaned = list(dict.fromkeys(clean_content(text) for text in texts))
    hashes = {content_hash(text): text for text in cleaned}
    existing = set(
        Memory.objects.filter(project=project, content_hash__in=list(hashes)).values_list(
            "content_hash", flat=True
        )
    )
    result = Distilled(known=[text for h, text in hashes.items() if h in existing])
    for text in cleaned:
        if content_hash(text) in existing:
            continue
        result.memories.append(
            services.memory_create(
                project=project,
                type=MemoryType.LEARNING,
                content=text,
                source=Source.LEARNING,
                actor=actor,
            )
        )
    if result.memories:
        held = services.memories_set_active(
            memory_ids=[m.pk for m in result.memories],
            active=False,
            actor=actor,
            reason=f"Distilled from conversation {conversation.pk}: not given to agents"
            " until a reviewer approves it.",
        )
        changed = {m.pk: m for m in held.changed}
        result.memories = [changed.get(m.pk, m) for m in result.memories]
    return result
