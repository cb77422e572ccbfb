"""A user's preferences in the context: their own section before the memories, inside the
same token budget.

Preferences come first when space is short: they take what they need up to their share of
the pool (the policy's ``share_preferences``), in order (the project's own, then those for
every project, each by key); the memories are packed into what they leave; and what the
memories leave goes back to the preferences that did not fit their share. Every step counts
the whole text exactly, so the budget is never exceeded."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from assembly.packing import Packed, Scored, pack
from assembly.render import (
    PREFERENCES_TITLE,
    preference_line,
    render_prompt,
    render_section,
    render_sections,
)
from memories.tokens import count_tokens
from people import preferences

# The most preferences of one user a context looks at; the rest are left out (``limit``).
MOST_OFFERED = 100


@dataclass(frozen=True)
class Offered:
    key: str
    scope: str  # project (set in the project) or global (approved for every project)
    category: str
    line: str


@dataclass(frozen=True)
class PreferenceGiven:
    """One of the user's preferences: given at ``rank``, or left out and why."""

    key: str
    scope: str
    category: str
    tokens: int
    rank: int | None
    reason: str | None  # budget or limit when left out


def offered(project_id: int, user_ref: str) -> list[Offered]:
    """The user's preferences in force in the project, in the order they are given."""
    return [
        Offered(
            key=key,
            scope="global" if for_every_project else "project",
            category=category,
            line=preference_line(key, value),
        )
        for key, value, category, for_every_project in preferences.values_in_force(
            project_id, user_ref
        )
    ]


def section(given: Sequence[Offered]) -> str:
    return render_section([o.line for o in given], PREFERENCES_TITLE)


def first(
    offers: Sequence[Offered],
    *,
    ceiling: int,
    cost: Callable[[str], int],
    fits: Callable[[str], bool],
) -> list[Offered]:
    """The preferences given before any memory: in order, each that keeps the section within
    ``ceiling`` tokens and the whole text (``fits``, given the section alone) in the budget."""
    taken: list[Offered] = []
    for offer in offers[:MOST_OFFERED]:
        trial = section([*taken, offer])
        if cost(trial) <= ceiling and fits(trial):
            taken.append(offer)
    return taken


def handed_back(
    offers: Sequence[Offered],
    taken: Sequence[Offered],
    *,
    fits: Callable[[str], bool],
) -> list[Offered]:
    """``taken`` and, in order, each preference left out that the whole text still has room
    for once the memories are packed (``fits``, given the section)."""
    chosen = list(taken)
    for offer in offers[:MOST_OFFERED]:
        if offer in chosen:
            continue
        trial = [o for o in offers if o in chosen or o is offer]
        if fits(section(trial)):
            chosen = trial
    return chosen


def explained(
    offers: Sequence[Offered], given: Sequence[Offered], cost: Callable[[str], int]
) -> list[PreferenceGiven]:
    rank = {offer.key: position for position, offer in enumerate(given, start=1)}
    return [
        PreferenceGiven(
            key=offer.key,
            scope=offer.scope,
            category=offer.category,
            tokens=cost("\n" + offer.line),
            rank=rank.get(offer.key),
            reason=None
            if offer.key in rank
            else ("limit" if position >= MOST_OFFERED else "budget"),
        )
        for position, offer in enumerate(offers)
    ]


@dataclass(frozen=True)
class Fitted:
    packed: Packed  # the memories chosen, and the whole text with the preferences
    given: list[Offered]
    ceiling: int
    tokens: int  # of the preferences' section
    explained: list[PreferenceGiven]


def fit(
    offers: Sequence[Offered],
    ranked: Sequence[Scored],
    *,
    budget: int,
    share: float,
    encoding: str,
    prompt: Mapping[str, str] | None = None,
    **packing: Any,
) -> Fitted:
    """The user's preferences and the memories in ``budget`` tokens: the preferences first
    within ``share`` of it, the memories (assembly.packing.pack, with ``packing``) in what is
    left, then the preferences that did not fit their share in what the memories left. The
    text is the prompt's sections (``prompt``) or the two sections alone."""

    def whole(preferences_section: str, memories_section: str) -> str:
        if prompt is not None:
            return render_prompt(prompt, memories_section, preferences_section)
        return render_sections(preferences_section, memories_section)

    counted: dict[str, int] = {}

    def count(text: str) -> int:
        """Each text counted once: the section alone and as the whole text are often one."""
        tokens = counted.get(text)
        if tokens is None:
            tokens = counted[text] = count_tokens(text, encoding)
        return tokens

    ceiling = int(budget * share)
    given = first(offers, ceiling=ceiling, cost=count, fits=lambda s: count(whole(s, "")) <= budget)
    head = section(given)
    packed = pack(
        ranked,
        budget=budget,
        encoding=encoding,
        render=lambda memories_section: whole(head, memories_section),
        **packing,
    )
    if len(given) < len(offers):
        memories_section = render_section([c.line for c in packed.chosen])
        more = handed_back(
            offers, given, fits=lambda s: count(whole(s, memories_section)) <= budget
        )
        if more != given:
            given = more
            text = whole(section(given), memories_section)
            packed = replace(packed, text=text, total_tokens=count(text))
    if not offers:
        return Fitted(packed, given, ceiling, 0, [])
    return Fitted(packed, given, ceiling, count(section(given)), explained(offers, given, count))
