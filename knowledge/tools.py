"""The tools and identifiers a memory names: what it prescribes by name ("use slog"), the
programs of the commands it quotes (`uv sync`), its identifiers of code. Pure: text in, stems
out, for the contradiction rules (knowledge.contradictions) to treat as names."""

from __future__ import annotations

import re

from knowledge.claims import NUMBER_WORDS
from knowledge.reading import NEGATORS, NUMBER, STOPWORDS, Words, stem, word_set

# Verbs before the tool a memory prescribes ("use X", not "move X").
USE = word_set("use uses using prefer prefers preferred choose pick adopt adopted rely relies")
_ARTICLES = word_set("the a an")
# How many, not what: "uses two pins", "uses several queues".
COUNTS = frozenset(NUMBER_WORDS) | word_set("several many few both")

_IDENTIFIER = re.compile(r"\b[A-Za-z]\w*(?:_\w*[A-Za-z0-9]|[a-z][A-Z]\w*)")


def identifiers(text: str) -> set[str]:
    """The stems of a text's identifiers of code: snake_case or camelCase names."""
    return {stem(name.lower()) for name in _IDENTIFIER.findall(text)}


_CODE_SPAN = re.compile(r"`([^`]+)`")
# A command: a program and what it is given ("uv sync", "pip install -r requirements.txt").
_COMMAND = re.compile(r"^\s*([A-Za-z][\w.-]*)\s+\S")


def prescribed(words: Words) -> set[str]:
    """What a text prescribes by name: the object of "use" ("use slog") and the program of
    each command it quotes (`uv sync`)."""
    found = set()
    tokens = words.tokens
    for index, token in enumerate(tokens[:-1]):
        # "in use" is no verb: "the one in use plus a spare"
        if token not in USE or (index and tokens[index - 1] == "in"):
            continue
        # "use the pnpm CLI", not "prefer to check" (a verb, not a tool) nor "uses two pins"
        ahead = [t for t in tokens[index + 1 : index + 3] if t not in _ARTICLES]
        if ahead and ahead[0] not in STOPWORDS | NEGATORS | COUNTS and not NUMBER.match(ahead[0]):
            found.add(stem(ahead[0]))
    return found | commands(words)


def named(words: Words) -> set[str]:
    """The tools a text names as names: its commands' programs, and what "use" names when
    it is an identifier, a path or a name in capitals ("use feature flags" names none)."""
    return (prescribed(words) & words.specific) | commands(words)


def commands(words: Words) -> set[str]:
    """The program of each command a text quotes (`uv sync`): a tool by its own name."""
    spans = _CODE_SPAN.findall(words.text)
    return {stem(match.group(1).lower()) for match in map(_COMMAND.match, spans) if match}


# (`name: value` with a space: `localhost:9090`, `https://...` and `python:3.12` are none)
_QUOTED_SETTING = re.compile(r"^\s*-{0,2}([A-Za-z][\w.-]*[A-Za-z0-9])(?:\s*=\s*|:\s+)\S")


def quoted_settings(words: Words) -> set[str]:
    """The settings a text quotes with a value (`autocommit: true`, `--pool=threads`)."""
    spans = _CODE_SPAN.findall(words.text)
    return {stem(match.group(1).lower()) for match in map(_QUOTED_SETTING.match, spans) if match}
