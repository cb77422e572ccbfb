"""Near-repeats (pure): a memory that says what a better-ranked one already says is not
given again.

Two texts repeat each other when the smaller one's words are (almost) all in the larger one
(``threshold``, the share of its words found there) and what the smaller one says that the
larger does not holds nothing specific: no number, version, path or identifier. So "X" and
"X (seen again in run-002)" repeat each other; "time out after 10 seconds" and "after 30
seconds" do not, nor do the same rule about ``src/core/`` and about ``src/api/``.
"""

from __future__ import annotations

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
    """The texts kept so far, with an index from each word to the texts holding it, so that
    a new text is compared only with the kept ones it shares a word with."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.kept: dict[int, frozenset[str]] = {}
        self.holding: defaultdict[str, list[int]] = defaultdict(list)

    def repeated(self, text: str) -> int | None:
        """The first kept text (by the order kept) that ``text`` repeats, if any."""
        words = tokens(text)
        shared: defaultdict[int, int] = defaultdict(int)
        for word in words:
            for key in self.holding.get(word, ()):
                shared[key] += 1
        for key in sorted(shared):
            other = self.kept[key]
            if shared[key] / max(min(len(words), len(other)), 1) >= self.threshold and repeats(
                words, other, self.threshold
            ):
                return key
        return None

    def keep(self, key: int, text: str) -> None:
        words = tokens(text)
        self.kept[key] = words
        for word in words:
            self.holding[word].append(key)
