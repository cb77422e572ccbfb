"""Near-repeats (pure): a memory that says what a better-ranked one already says is not
given again.

Two texts repeat each other when the smaller one's words are (almost) all in the larger one
(``threshold``, the share of its words found there) and what the smaller one says that the
larger does not holds nothing specific: no number, version, path or identifier. So "X" and
"X (seen again in run-002)" repeat each other; "time out after 10 seconds" and "after 30
seconds" do not, nor do the same rule about ``src/core/`` and about ``src/api/``.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

_TOKEN = re.compile(r"\w(?:[\w./:-]*\w)?")


def tokens(text: str) -> frozenset[str]:
    """The words of ``text``, lower-cased; paths, versions and identifiers stay whole."""
    return frozenset(token.lower() for token in _TOKEN.findall(text))


def specific(token: str) -> bool:
    """A number, version, path or identifier: a token that changes what is said."""
    return any(ch.isdigit() or ch in "_./:-" for ch in token)


def repeats(small: frozenset[str], large: frozenset[str], threshold: float) -> bool:
    if len(small) > len(large):
        small, large = large, small
    if not small:
        return False
    if len(small & large) / len(small) < threshold:
        return False
    return not any(specific(token) for token in small - large)


class Seen:
    """The texts kept so far, indexed so that a new text is compared only with the kept ones
    that can be its repeats (a prefix filter, exact):

    * a kept text at least as long as the new one holds, of the new one's words, all but at
      most ``n - needed(n)``: so at least one of any ``n - needed(n) + 1`` of them, and the
      rarest so many (by how many kept texts hold each) are looked up;
    * a kept text shorter than the new one has that many of its own words, chosen when it
      was kept, as its signature: the new text holds at least one of them.
    """

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.kept: dict[int, frozenset[str]] = {}
        self.holding: defaultdict[str, list[int]] = defaultdict(list)
        self.signed: defaultdict[str, list[int]] = defaultdict(list)

    def _spare(self, size: int) -> int:
        """How many words a text of ``size`` words names so that a repeat holds one of them:
        one more than it may miss (at least ``threshold`` of them must be shared)."""
        needed = max(1, math.ceil(self.threshold * size - 1e-9))
        return max(1, size - needed + 1)

    def _rarest(self, words: frozenset[str], count: int) -> list[str]:
        return sorted(words, key=lambda word: (len(self.holding.get(word, ())), word))[:count]

    def repeated(self, text: str) -> int | None:
        """The kept text (the lowest key) that ``text`` repeats, if any."""
        words = tokens(text)
        size = len(words)
        if not size or not self.kept:
            return None
        found = {
            key
            for word in self._rarest(words, self._spare(size))
            for key in self.holding.get(word, ())
            if len(self.kept[key]) >= size
        }
        found.update(
            key for word in words for key in self.signed.get(word, ()) if len(self.kept[key]) < size
        )
        for key in sorted(found):
            if repeats(words, self.kept[key], self.threshold):
                return key
        return None

    def keep(self, key: int, text: str) -> None:
        words = tokens(text)
        self.kept[key] = words
        for word in words:
            self.holding[word].append(key)
        for word in self._rarest(words, self._spare(len(words))):
            self.signed[word].append(key)
