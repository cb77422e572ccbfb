"""Text as the secret scanner reads it, whatever the disguise.

A secret can be written so that a person still reads it but a pattern does not match it:
broken up by characters nobody sees (a zero-width space, a variation selector, a soft
hyphen, a Hangul filler), spelled with letters of another script that look the same (the
Cyrillic er, U+0440, for the p of ``ghp_``), or split by one space. The scanner
(memories.secrets) reads text in three forms, each with the way back to the one before:

* ``visible``: what a person reads. Unicode's default-ignorable code points and format
  characters (``Default_Ignorable_Code_Point`` and category ``Cf``, from the ``regex``
  module's Unicode tables) are removed, and compatibility forms are folded (NFKC: full-width
  letters, ligatures, mathematical letters, odd spaces). Positions of findings are given in
  this form.
* ``latin``: ``visible`` with each letter or digit that Unicode's confusables data (UTS #39,
  ``confusables.txt``, through the ``confusable_homoglyphs`` package) finds confusable with
  Latin letters, digits or ASCII signs written as those: its skeleton. The data's prototype
  for the shapes of I, l and 1 is ``l`` and for O and 0 it is ``O``: an upper-case letter of
  that shape becomes ``I``, a digit ``1`` or ``0``.
* ``joined``: runs of token characters split by single spaces, put together (``Joined``).

Folding is only for reading: what is stored is what was written.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from itertools import accumulate

import regex

# What a person does not see (Unicode's own sets, kept current by the regex module).
_IGNORED = regex.compile(r"[\p{Default_Ignorable_Code_Point}\p{Cf}]+")


def visible(text: str) -> str:
    """``text`` as a person reads it: default-ignorable and format characters removed,
    compatibility forms folded (NFKC)."""
    if text.isascii():
        return text  # nothing to remove, nothing to fold
    shown = unicodedata.normalize("NFKC", _IGNORED.sub("", text))
    return _IGNORED.sub("", shown)  # NFKC can make one (U+FFA0 is U+3164)


@cache
def _latin_table() -> dict[int, str]:
    """For ``str.translate``: each non-ASCII character that is confusable with ASCII, the
    ASCII it looks like (see the module)."""
    from confusable_homoglyphs.utils import load

    table: dict[int, str] = {}
    for char, glyphs in load("confusables.json").items():
        if len(char) != 1 or char.isascii():
            continue
        looks = [g["c"] for g in glyphs if g["c"].isascii() and g["c"].strip() == g["c"]]
        looks = [look for look in looks if look and look.isprintable()]
        if looks:
            table[ord(char)] = _fitted(char, min(looks, key=lambda look: (len(look), look)))
    return table


def _fitted(char: str, look: str) -> str:
    category = unicodedata.category(char)
    if category == "Nd" and look in ("l", "O"):
        return "1" if look == "l" else "0"
    if category == "Lu" and look == "l":
        return "I"
    return look


@dataclass(frozen=True)
class Folded:
    """``text`` read in another form; ``origin[i]`` is where its character ``i`` came from
    in the form it was made from (None: the same place)."""

    text: str
    origin: list[int] | None = None

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Where ``text[start:end]`` came from."""
        if self.origin is None:
            return start, end
        return self.origin[start], self.origin[end - 1] + 1


def latin(shown: str) -> Folded:
    """``shown`` (a ``visible`` text) with confusable letters written in Latin."""
    if shown.isascii():
        return Folded(shown)
    table = _latin_table()
    folded = shown.translate(table)
    if len(folded) == len(shown):
        return Folded(folded)  # one for one: the same places
    origin: list[int] = []
    for index, char in enumerate(shown):
        origin.extend([index] * len(table.get(ord(char), char)))
    return Folded(folded, origin)


# A token goes through these (base64, URL-safe base64, dotted and dashed tokens).
_TOKEN = "A-Za-z0-9_\\-+/=.~"
# A run of token characters, whole; one that looks like part of a token rather than a word
# (a digit, a _ or -, or a capital after its first character).
_WORD = rf"[{_TOKEN}]++"
_PART = rf"[{_TOKEN}]*?(?:[0-9_\\-]|[{_TOKEN}][A-Z])[{_TOKEN}]*+"
# Runs split by single spaces where one of the two runs at each space looks like part of a
# token: ``AKIAIOSF ODNN7EXAMPLE`` or ``key AKIAIOSF``, never ``the key``.
_GROUP = re.compile(
    rf"(?<![{_TOKEN}])(?:{_WORD} (?={_PART}))?{_PART}"
    rf"(?: {_PART}| {_WORD}(?= {_PART}))*(?: {_WORD})?"
)
# Where in a piece a token may start: at its start, or after an = (``KEY=AKIA...``).
_STARTS = re.compile(r"=")
# Pieces a token may span: a secret split by one, two or three spaces.
MAX_PIECES = 4


@dataclass(frozen=True)
class Joined:
    """Runs of token characters split by single spaces, put together: ``text``, the runs'
    places in the line (``pieces``) and where the spaces were taken out (``joins``, offsets
    in ``text``)."""

    text: str
    pieces: tuple[tuple[int, int], ...]
    joins: tuple[int, ...]

    def starts(self) -> Iterator[tuple[int, int]]:
        """Where a token may start (a piece's start, or after ``_STARTS`` in it; not in the
        last piece) and how far it may reach (``MAX_PIECES`` pieces)."""
        bounds = (0, *self.joins, len(self.text))
        for index in range(len(self.pieces) - 1):
            start, end = bounds[index], bounds[index + 1]
            reach = bounds[min(index + MAX_PIECES, len(self.pieces))]
            yield start, reach
            for inside in _STARTS.finditer(self.text, start, end - 1):
                yield inside.end(), reach

    def crosses(self, start: int, end: int) -> bool:
        return any(start < join < end for join in self.joins)

    def piece(self, start: int, end: int) -> tuple[int, int]:
        """Where the whole pieces are (in the line) that ``text[start:end]`` touches."""
        bounds = (0, *self.joins, len(self.text))
        first = max(i for i, b in enumerate(bounds) if b <= start)
        last = min(i for i, b in enumerate(bounds) if b >= end)
        return self.pieces[first][0], self.pieces[last - 1][1]


def joined(text: str) -> Iterator[Joined]:
    """Each group of runs of ``text`` split by single spaces (``_GROUP``), put together."""
    for match in _GROUP.finditer(text):
        parts = match.group().split(" ")
        if len(parts) < 2:
            continue
        pieces, position = [], match.start()
        for part in parts:
            pieces.append((position, position + len(part)))
            position += len(part) + 1
        joins = tuple(accumulate(len(part) for part in parts[:-1]))
        yield Joined("".join(parts), tuple(pieces), joins)
