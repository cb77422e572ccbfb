"""Exclusivity: "only X" against another thing in X's place ("also Y", "Y too", "any"),
a list said to be all against a longer one, and "X alone" against "any" or "its own"
(pure: two sentences in, a finding or None out; knowledge.contradictions asks them)."""

from __future__ import annotations

import itertools
import re

from knowledge.claims import NUMBER_WORDS, UNITS, Sentence
from knowledge.reading import STOPWORDS, stem, word_set
from knowledge.rules import EXCLUSIVITY, Finding
from knowledge.said import all_matches, first_match, name_like, shared

_ONLY = re.compile(
    r"\b(?:only|exclusively|solely|nothing\s+but)\s+(?:(?:via|through|with|by|on|in|from|use|"
    r"uses|using|the|a|an)\s+)*[`'\"]?(?P<after>[\w./@+-]+)"
    # "SPM-only", "Swift Package Manager only;": not "GC only runs when" (only when).
    r"|(?P<before>[\w./@+-]+)(?:-only\b|\s+only(?=\s*(?:[;,.)]|$)))",
    re.I,
)
_MORE = re.compile(r"\b(?:also|too|as\s+well|either|any|or|alongside|besides)\b", re.I)


def exclusivity(
    a: Sentence,
    b: Sentence,
    words_a: frozenset[str],
    words_b: frozenset[str],
    common: frozenset[str],
) -> Finding | None:
    """``a`` says only X where ``b`` names something else in X's place, or X and more."""
    match = first_match(_ONLY, a.text)
    if not match:
        return None
    said = match.group("after") or match.group("before") or ""
    only = stem(said.lower())
    # a name in code quotes is a name, however plain its word ("only the `scheduler` queue")
    quoted = a.text[: match.start("after")].endswith("`") if match.group("after") else False
    if not only or only in STOPWORDS or not (name_like(said) or quoted):
        return None
    context = shared(words_a, words_b, common) - {only}
    if len(context) < 2:
        return None
    others = [
        t for t in b.tokens[1:]
        if name_like(t.text) and stem(t.word) not in words_a and t.word not in STOPWORDS
    ]  # fmt: skip
    # Another thing in X's place, or X with more ("also Y").
    if not others or (only in words_b and not first_match(_MORE, b.text)):
        return None
    return Finding(
        EXCLUSIVITY,
        only,
        (a.start + match.start(), a.start + match.end()),
        (others[0].start, others[0].end),
    )


# A list of things: "darwin, linux and windows", "eu-west, us-east or ap-south".
_ITEM = r"[\w./@+-]*\w"
_LIST = re.compile(
    rf"\b({_ITEM}(?:\s*,\s*{_ITEM})*,?\s+(?:and|or)\s+{_ITEM}|{_ITEM}(?:\s*,\s*{_ITEM})+)"
)
# "only builds darwin and linux": what "only" allows, a list within three words of it.
_ONLY_WORD = re.compile(r"\b(?:only|exclusively|solely)\s+", re.I)


def _word_before(text: str, at: int) -> str | None:
    """The stem of the last word before offset ``at``."""
    words = re.findall(r"[A-Za-z][\w-]*", text[:at])
    return stem(words[-1].lower()) if words else None


# The items of a list: "a, b and c", "a, b, and c", "a or b".
_LIST_SPLIT = re.compile(r"\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or)\s+")


def _items(text: str) -> frozenset[str]:
    return frozenset(stem(item.strip().lower()) for item in _LIST_SPLIT.split(text)) - STOPWORDS


def enumerated(
    a: Sentence,
    b: Sentence,
    words_a: frozenset[str],
    words_b: frozenset[str],
    common: frozenset[str],
) -> Finding | None:
    """``a`` allows only some things ("only builds darwin and linux": a list at most two
    words after "only") where ``b`` lists the same kind after the same word, with one more
    ("builds darwin, linux and windows binaries")."""
    only = first_match(_ONLY_WORD, a.text)
    if only is None:
        return None
    rest = a.text[only.end() :]
    said = next(
        (
            match
            for match in all_matches(_LIST, rest)
            if len(rest[: match.start()].split()) <= 2
            and not re.search(r"[;:.]", rest[: match.start()])
        ),
        None,
    )
    if said is None:
        return None
    allowed = _items(said.group(1))
    verb = _word_before(a.text, only.end() + said.start()) or _word_before(a.text, only.start())
    for listed in all_matches(_LIST, b.text):
        items = _items(listed.group(1))
        if len(items) < 2 or not (items & allowed) or not (items - allowed):
            continue
        # Allowed for the same thing: the same word before both lists ("only builds darwin
        # and linux" / "builds darwin, linux and windows"; "delete" is not "view").
        if not verb or verb != _word_before(b.text, listed.start()):
            continue
        # About the same thing beyond the lists: a word in common that neither lists.
        if not (shared(words_a, words_b, common) - items - allowed):
            continue
        return Finding(
            EXCLUSIVITY,
            " ".join(sorted(items - allowed))[:80],
            (a.start + only.start(), a.start + only.end() + said.end()),
            (b.start + listed.start(), b.start + listed.end()),
        )
    return None


_EXCEPT = re.compile(r"\b(?:except|but|unless|apart\s+from|other\s+than)\b", re.I)
_EXCLUSIVE = re.compile(r"\b(?:only|alone|exclusively|solely)\b", re.I)
# "every" says how often, not who, before a number or a unit ("polls every 180 seconds",
# "every other day").
_TIME_WORDS = {unit for unit, (dimension, _) in UNITS.items() if dimension == "time"}
# (each unit or occasion, its plural too: "every two weeks", "every Monday", "every
# release", "every time", "every N minutes", "every other day" but not "every other team")
_HOW_OFTEN = "|".join(
    sorted(
        NUMBER_WORDS.keys() - {"one"}
        | {unit for unit in _TIME_WORDS if len(unit) > 1}
        | word_set(
            "few couple morning evening night weekday weekend quarter year time release sprint "
            "deploy build run cycle n monday tuesday wednesday thursday friday saturday sunday"
        )
    )
)
_INCLUSIVE = re.compile(
    r"\b(?:any|anyone|anybody|(?<!\bon\s)(?<!\bat\s)(?<!\bafter\s)(?<!\bwith\s)"
    r"every(?!\s+(?:other\s+)?(?:\d|(?:" + _HOW_OFTEN + r")s?\b))|"
    r"everyone|all|also|too|as\s+well|own|itself|themselves|both)\b",
    re.I,
)


_MODAL = re.compile(r"\b(?:may|can|could|should|must|(?:is|are)\s+allowed\s+to)\b", re.I)


def inclusive(
    a: Sentence,
    b: Sentence,
    words_a: frozenset[str],
    words_b: frozenset[str],
    common: frozenset[str],
) -> Finding | None:
    """``a`` says one alone does a thing ("only owners can merge", "created by the
    matchmaker alone") where ``b`` has any, every or another do it too ("anyone can merge",
    "the game server creates its own")."""
    only, more = first_match(_EXCLUSIVE, a.text), first_match(_INCLUSIVE, b.text)
    if only is None or first_match(_EXCLUSIVE, b.text):
        return None
    if first_match(_EXCEPT, a.text) or first_match(_EXCEPT, b.text):
        return None  # "all but X", "every one except X": the exception is said
    # What "only" restricts, said by the other side too: the same restriction in other
    # words ("only mutated on the main actor" / "all updates happen on the main actor").
    # (In its own clause: "created by the matchmaker alone; game servers only report").
    clause = a.text.find(";", only.end())
    end = a.start + (clause if clause >= 0 else len(a.text))
    # "only owners can merge": "only" restricts who, before the modal; the action after it
    # is what both may say ("every maintainer can merge")
    modal = _MODAL.search(a.text, only.end(), end - a.start)
    end = a.start + modal.start() if modal else end
    restricted = [
        stem(t.word)
        for t in a.tokens
        if a.start + only.end() <= t.start < end
        and re.fullmatch(r"[a-z]+(?:-[a-z]+)*", t.word)
        and t.word not in STOPWORDS
    ][:4]
    said = [word for word in restricted if word in words_b]
    # "only admins can delete" / "admins and editors can delete": who else, listed
    others = _others_too(b, restricted, _acts(a.text, modal)) if modal and said else None
    if not others and len(said) >= 2 and 2 * len(said) >= len(restricted):
        return None
    if modal and said and len(said) == len(restricted) and not others:
        return None  # the same who ("the on-call engineer can page ... at any hour")
    if len(shared(words_a, words_b, common)) < 2:
        return None
    where = (more.start(), more.end()) if more else others
    if where is None:
        return None
    return Finding(
        EXCLUSIVITY,
        " ".join(sorted(shared(words_a, words_b, common)))[:80],
        (a.start + only.start(), a.start + only.end()),
        (b.start + where[0], b.start + where[1]),
    )


def _acts(text: str, modal: re.Match[str]) -> tuple[str, ...] | None:
    """The stems of the verb after a modal and of the first word that carries meaning after
    it: the act and what it is done to ("can delete projects", "may tag a release")."""
    verb = re.match(r"\s+(?:not\s+)?(?:be\s+)?([A-Za-z]+)", text[modal.end() :])
    if verb is None:
        return None
    # what it is done to: the last word of the phrase after the verb ("project comments")
    after = re.findall(r"[A-Za-z][\w-]*|[^\w\s]", text[modal.end() + verb.end() :])
    phrase = list(itertools.takewhile(lambda w: w.lower() not in _ENDS, after))
    words = [w.lower() for w in phrase if w.lower() not in _WHO_ARTICLES]
    return stem(verb.group(1).lower()), stem(words[-1]) if words else ""


def _others_too(
    b: Sentence, restricted: list[str], act: tuple[str, ...] | None
) -> tuple[int, int] | None:
    """Where ``b`` lists who may do the same act to the same thing (``act``, ``_acts``),
    before its modal, with another beside the one "only" allows ("any admin or editor can
    delete projects" against "only admins can delete projects"; never "... can view
    projects" nor "... can delete comments")."""
    modal = _MODAL.search(b.text)
    if modal is None or act is None or _acts(b.text, modal) != act:
        return None
    who = b.text[: modal.start()]
    items = [item.split() for item in _LIST_SPLIT.split(who.strip())]
    # each a noun phrase of at most two words after "any" or "the" ("admins, after a
    # review, can": no list of who)
    heads = [
        stem(words[-1].lower())
        for words in (
            [word for word in item if word.lower() not in _WHO_ARTICLES] for item in items
        )
        if 0 < len(words) <= 2 and words[0].lower() not in STOPWORDS
    ]
    if len(heads) < 2 or len(heads) != len(items):
        return None
    listed = set(heads)
    return (0, len(who.rstrip())) if listed & set(restricted) and listed - set(restricted) else None


_WHO_ARTICLES = word_set("any every all both either the a an our their its")
# Where the phrase after a verb ends: a preposition or conjunction, or punctuation.
_ENDS = (STOPWORDS - _WHO_ARTICLES) | set(",.;:!?()")
