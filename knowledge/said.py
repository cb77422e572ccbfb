"""A memory read for comparison, sentence by sentence: each sentence's words that carry
meaning and what it claims by class (quantities, versions, schedules), read once and kept
with the text (a memory is compared with several candidates), and the small readings the
rules share. Pure."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from knowledge import claims, schedules, versions
from knowledge.claims import Sentence, split
from knowledge.reading import STOPWORDS, Words, read, stem


@dataclass
class Read:
    """A memory's sentences with what each claims, each read once (a memory is compared
    with several candidates: ``of`` keeps the latest texts read)."""

    text: str
    sentences: list[Sentence]
    words: list[frozenset[str]] = field(default_factory=list)
    said: list[Said] = field(default_factory=list)

    @classmethod
    def of(cls, text: str) -> Read:
        return _read(text)

    @functools.cached_property
    def quantities(self) -> list[claims.Quantity]:
        """Every sentence's quantities (read once: a memory meets several candidates)."""
        return [quantity for said in self.said for quantity in said.quantities]


@dataclass
class Said:
    """What one sentence claims, by class, read when first asked."""

    sentence: Sentence
    _versions: list[versions.Version] | None = None
    _schedules: list[schedules.Schedule] | None = None
    _quantities: list[claims.Quantity] | None = None
    _reading: Words | None = None

    @property
    def versions(self) -> list[versions.Version]:
        if self._versions is None:
            self._versions = versions.versions(self.sentence)
        return self._versions

    @property
    def schedules(self) -> list[schedules.Schedule]:
        if self._schedules is None:
            self._schedules = schedules.schedules(self.sentence)
        return self._schedules

    @property
    def quantities(self) -> list[claims.Quantity]:
        if self._quantities is None:
            self._quantities = claims.quantities(self.sentence)
        return self._quantities

    @property
    def reading(self) -> Words:
        if self._reading is None:
            self._reading = read(self.sentence.text)
        return self._reading


# A write compares one memory with at most 8 candidates, a walk's batch 200 with theirs:
# 512 texts (tokens, sentences, claims: some kilobytes each) keep both, in bounded memory.
@functools.lru_cache(maxsize=512)
def _read(text: str) -> Read:
    sentences = split(text)
    return Read(
        text,
        sentences,
        [frozenset(sentence_words(s)) for s in sentences],
        [Said(s) for s in sentences],
    )


@functools.lru_cache(maxsize=2048)
def all_matches(pattern: re.Pattern[str], text: str) -> tuple[re.Match[str], ...]:
    """A pattern's matches in a sentence, found once: a sentence is compared with many."""
    return tuple(pattern.finditer(text))


def first_match(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    found = all_matches(pattern, text)
    return found[0] if found else None


def sentence_words(sentence: Sentence) -> set[str]:
    """The stems of a sentence's words that carry meaning; a path or a dotted name gives
    its parts too ("log/slog" says "slog")."""
    return {word for token in sentence.tokens for word in words_of(token.word)}


def words_of(token: str) -> set[str]:
    return {
        stem(word)
        for word in {token, *re.split(r"[/.:]+", token)}
        if word and word[:1].isalpha() and word not in STOPWORDS and len(word) > 1
    }


def shared(a: frozenset[str], b: frozenset[str], common: frozenset[str]) -> set[str]:
    return set(a & b) - common


def name_like(word: str) -> bool:
    """A name, not a plain word: capitals, or the marks of an identifier, path or package."""
    return (
        word[:1].isupper()
        or any(ch in word for ch in "._/@")
        or (any(ch.isupper() for ch in word[1:]) and word.isalnum())
    )


def said_in(words: Words, word: str, common: frozenset[str] = frozenset()) -> bool:
    """Whether a memory says ``word`` (a stem), on its own or as the last part of a compound
    name that is itself a compound name ("RocksDB" in "EmbeddedRocksDB"; never "Client" in
    "AsyncClient", another thing)."""
    if not word or word in common:
        return False
    if word in words.content:
        return True
    text = words.text
    for match in re.finditer(re.escape(word), text, re.I):
        at = match.start()
        joined = at > 0 and text[at].isupper() and text[at - 1].isalnum()
        # its own capitals or digits inside it, to the end of the name
        name = re.match(r"[A-Za-z0-9]+", text[at:])
        if joined and name and re.search(r"[a-z][A-Z]|\d", name.group()) and len(word) > 4:
            return True
    return False
