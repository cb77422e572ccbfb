"""What a memory says fills a role: "Renderer state is Zustand", "application secrets are
Sealed Secrets", "the local database is Drift on SQLite". Two memories that give one role
two tools, each never named by the other, are a choice to make (knowledge.contradictions).
Pure: text in, findings out."""

from __future__ import annotations

import re
from dataclasses import dataclass

from knowledge.claims import split
from knowledge.reading import STOPWORDS, Words, stem, word_set
from knowledge.scopes import SCOPES

# How a role is said to be filled: "is", "lives in", "are kept in", "goes through",
# "reach pods through", "is built on".
_FILLED = (
    r"(?:is|are)(?:\s+(?:kept|stored|managed|handled|built|done|written|powered|served|"
    r"provided)\s+(?:in|by|with|on|through|from))?|lives?\s+in|go(?:es)?\s+through|"
    r"reach(?:es)?\s+\w+\s+through|runs?\s+on"
)
_ROLE = re.compile(
    r"^(?:(?:[Tt]he|[Oo]ur|[Aa]ll)\s+)?(?P<role>[A-Za-z][a-z-]*(?:\s+[a-z][a-z-]*){0,3}?)\s+"
    rf"(?P<filled>{_FILLED})\s+(?:(?:a|an|the)\s+)?"
    r"(?P<name>[A-Z][\w.-]*(?:\s+[A-Z][\w.-]*){0,2})"
)
_ARTICLES = word_set("the our all a an")
# Not tools: a scope, a pronoun, a format or a standard ("timestamps are UTC", "... are
# ISO-8601 strings").
_NOT_NAMES = SCOPES | word_set("i it this that we you they one")
_FORMATS = word_set(
    "utc gmt json yaml toml xml csv html markdown pdf utf-8 utf8 ascii iso iso-8601 rfc"
)


@dataclass(frozen=True)
class Role:
    role: frozenset[str]  # the stems of what is filled ("renderer state")
    name: str  # what fills it, as written ("Redux Toolkit")
    span: tuple[int, int]  # the sentence that says so


def roles(text: str) -> list[Role]:
    """Each sentence that begins by saying what fills a role: a plain noun phrase, a verb
    that says "is" or "is kept in", and a name in capitals."""
    found = []
    for sentence in split(text):
        match = _ROLE.match(sentence.text)
        if not match or not match.group("name")[:1].isupper():
            continue
        role_words = match.group("role").split()
        if any(word != word.lower() for word in role_words[1:]):
            continue  # "Sentry Relay is ...": a name, not a role
        name = match.group("name").rstrip(".-")
        if name.lower() in _NOT_NAMES or name.split()[0].lower() in _FORMATS:
            continue
        role = frozenset(stem(w.lower()) for w in role_words if w.lower() not in _ARTICLES)
        if not role or role <= STOPWORDS:
            continue
        end = sentence.start + len(sentence.text.rstrip())
        found.append(Role(role, name, (sentence.start, end)))
    return found


def _named(filler: Role, words: Words) -> bool:
    """Whether a memory says a word of a name that is not the role's own ("Redux" of
    "Redux Toolkit", but not "secrets" of "Sealed Secrets" for application secrets)."""
    parts = {stem(part.lower()) for part in re.split(r"[\s.-]+", filler.name) if part}
    return bool((parts - filler.role) & words.content)


def other_fillers(a: Words, b: Words) -> tuple[Role, Role] | None:
    """One role filled by two names, each of which the other memory never says."""
    for left in roles(a.text):
        for right in roles(b.text):
            if left.role == right.role and not _named(left, b) and not _named(right, a):
                return left, right
    return None
