"""Polarity: one memory forbids what the other does or relies on, in so many words or in
other words of the same action; a name one side denies and the other relies on; opposite
words beside the same thing; a setting given another value. Pure (knowledge.rules has the
other classes and the findings)."""

from __future__ import annotations

import functools
import re

from knowledge.claims import Sentence, root
from knowledge.reading import STOPWORDS, stem, word_set
from knowledge.rules import CHOICE, POLARITY, QUANTITY, Finding
from knowledge.said import all_matches, first_match, name_like, shared, words_of

# Words that say a thing does harm: a memory that says so of X agrees with one that says
# "don't X", it does not rely on X.
HARM = frozenset(
    stem(word)
    for word in word_set(
        "slow slows slowed revert reverted hang hangs break breaks broke broken leak leaks "
        "error errors problem issue bug wrong bad stale duplicate duplicates lose lost loses "
        "corrupt corrupts timeout risk careful beware caution danger dangerous expensive "
        "costly deadlock deadlocks race fail fails failed crash crashes crashed exhaust "
        "exhausts exhausted exhausting saturate saturates saturated overload overloaded drift "
        "drifts drifted"
    )
)


# Verbs that do the same to a thing: a prohibition of one is contradicted by another.
_SAME_ACTION = [
    "write writ fill populate store save set put cache persist insert update",
    "read fetch load get query look",
    "call invoke hit use request",
    "run execute start launch spawn trigger schedule",
    "delete remove drop purge truncate clear wipe",
    "create add insert make generate",
    "commit push merge deploy release ship publish",
    "log print emit record",
    "block wait sleep",
    "retry rerun repeat",
    "import depend require",
    "share expose return send",
    "mock stub fake patch",
    "enable set turn activate switch",
]
ACTION: dict[str, set[int | str]] = {}
for _group, _said in enumerate(_SAME_ACTION):
    for _word in _said.split():
        ACTION.setdefault(stem(_word), set()).add(_group)

_PROHIBIT = re.compile(
    r"\b(?:never|do\s+not|don't|does\s+not|doesn't|must\s+not|mustn't|should\s+not|"
    r"shouldn't|cannot|can't|may\s+not|avoid(?:s|ing)?|no\s+longer|not\s+allowed\s+to|"
    r"forbidden\s+to|(?:is|are)\s+not\s+(?:allowed|permitted)\s+to|stop(?:ped)?|without)\b",
    re.I,
)
# Words after a name that say nothing of it ("no Jenkins anymore").
_ADVERBS = word_set(
    "anymore any more here there anywhere either ever yet again now please once already"
)
_FORBID = re.compile(
    r"never|do\s+not|don't|must\s+not|mustn't|should\s+not|shouldn't|may\s+not", re.I
)
_NEGATED = re.compile(r"\b(?:not|never|no|don't|doesn't|isn't|aren't|cannot|can't|without)\b", re.I)
_OPPOSITE_PAIRS = [
    ("enabl", "disabl"), ("allow", "forbid"), ("allow", "deny"), ("allow", "block"),
    ("sync", "async"), ("synchronous", "asynchronous"), ("requir", "optional"),
    ("mandatory", "optional"), ("always", "never"), ("public", "private"),
    ("lazy", "eager"), ("lazily", "eagerly"), ("inclusive", "exclusive"), ("on", "off"),
    ("accept", "reject"), ("include", "exclude"), ("includ", "exclud"), ("strict", "lenient"),
    ("mutable", "immutable"), ("manual", "automatic"), ("manually", "automatically"),
    ("sequential", "parallel"), ("serial", "parallel"), ("blocking", "non-blocking"),
    ("incremental", "full"), ("before", "after"), ("over", "under"), ("must", "optional"),
    ("enabl", "off"), ("on", "disabl"), ("required", "omitted"),
]  # fmt: skip


def base(word: str) -> str:
    """A word's stem, an adverb read as its adjective ("asynchronously" as "asynchronous",
    "fully" as "full", "automatically" as "automatic"), for opposites to meet."""
    if word == "fully":
        word = "full"
    elif word.endswith("ically"):
        word = word[:-4]
    elif word.endswith("ily") and len(word) > 5:
        word = word[:-3] + "y"
    elif word.endswith("ly") and len(word) > 5:
        word = word[:-2]
    return stem(word)


_ORDER = frozenset(("before", "after", "over", "under", "first", "last"))
OPPOSITE: dict[str, set[str]] = {}
for _left, _right in _OPPOSITE_PAIRS:
    for _one, _other in ((_left, _right), (_right, _left)):
        for _key in {_one, base(_one)}:
            OPPOSITE.setdefault(_key, set()).update({_other, base(_other)})


def _action(
    sentence: Sentence, after: int, own: bool = False
) -> tuple[set[int | str], str | None, int]:
    """After a prohibition: the action (its groups), the thing it acts on first (its
    object's stem), and the index of the last token read."""
    groups: set[int | str] = set()
    last = after
    for index in range(after, min(len(sentence.tokens), after + 6)):
        word = sentence.tokens[index].word
        if word in STOPWORDS or word in ("not", "no"):
            continue
        last = index
        if not groups:
            # a verb of no known group is its own ("do not eager-load authors")
            groups = ACTION.get(stem(word)) or (
                {stem(word)} if own and re.fullmatch(r"[a-z]+(?:-[a-z]+)?", word) else set()
            )
            if not groups:
                return groups, None, last
            continue
        return groups, stem(word), last
    return groups, None, last


def _token_at(sentence: Sentence, offset: int) -> int:
    for index, token in enumerate(sentence.tokens):
        if token.end > offset:
            return index
    return len(sentence.tokens) - 1


def polarity(a: Sentence, b: Sentence, words_b: frozenset[str]) -> Finding | None:
    """``a`` forbids an action that ``b`` does or prescribes, on the same thing (not one
    that says it does harm: "module-level calls slow the parser" agrees with "don't")."""
    if words_b & HARM:
        return None
    for match in all_matches(_PROHIBIT, a.text) if not first_match(_NEGATED, b.text) else ():
        at = _token_at(a, a.start + match.end())
        # a verb of no known kind is read only after a plain prohibition ("do not
        # eager-load"; not "without it two students", nor the `.stop()` of code)
        groups, thing, last = _action(a, at, own=bool(_FORBID.fullmatch(match.group(0))))
        # a thing by its qualified name, or by its own ("Rails.cache" / "the cache")
        if not groups or thing is None or not {thing, thing.rsplit(".", 1)[-1]} & words_b:
            continue
        if all(isinstance(group, str) for group in groups) and not _all_said(a, at, words_b):
            continue  # a verb of its own needs its whole phrase said ("squash on the release")
        if any((ACTION.get(stem(token.word)) or {stem(token.word)}) & groups for token in b.tokens):
            first = (a.start + match.start(), a.tokens[last].end)
            return Finding(POLARITY, thing, first, (b.start, b.tokens[-1].end))
    # "no notebook may be committed with outputs" / "commit the notebooks with outputs"
    affirmed: frozenset[str] | None = None
    for match in all_matches(_NONE_MAY_BE, a.text):
        thing, done = stem(match.group("thing").lower()), _verb(match.group("done").lower())
        # done in the other with what qualifies it ("with outputs"), and not denied in that
        # clause ("never commit", "stored in Vault, not in the repo"; "without rerunning" in
        # another clause denies nothing of it)
        affirmed = _affirmed(b) if affirmed is None else affirmed
        if (
            thing in affirmed
            and _all_said(a, _token_at(a, a.start + match.end()), affirmed)
            and any(
                _verb(token.word) == done and not _denied_clause(b, at)
                for at, token in enumerate(b.tokens)
            )
        ):
            first = (a.start + match.start(), a.start + match.end())
            return Finding(POLARITY, thing, first, (b.start, b.tokens[-1].end))
    return None


def _all_said(sentence: Sentence, at: int, words: frozenset[str]) -> bool:
    """Whether ``words`` say every word that carries meaning in the clause from token ``at``
    on (four at most): what an action is done to and how."""
    if at >= len(sentence.tokens):
        return True
    offset = sentence.tokens[at].start - sentence.start
    clause = re.split(r"[;,.:!?(]", sentence.text[offset:], maxsplit=1)[0]
    said = [
        word
        for word in re.findall(r"[a-z][\w-]*", clause.lower())
        if word not in STOPWORDS and word not in _ADVERBS
    ][:4]
    return all(stem(word) in words or word in words for word in said)


def _denied_clause(sentence: Sentence, at: int) -> bool:
    """Whether the clause of token ``at`` (between punctuation or a conjunction: "so",
    "because", "but") has a denial in it."""
    text, offset = sentence.text, sentence.tokens[at].start - sentence.start
    before = _CLAUSES.split(text[:offset])[-1]
    after = _CLAUSES.split(text[offset:], maxsplit=1)[0]
    return _denies(before + after)


def _affirmed(sentence: Sentence) -> frozenset[str]:
    """The stems of a sentence's clauses that deny nothing ("stored in Vault, not in the
    repo" affirms Vault, not the repo)."""
    return frozenset(
        stem(word)
        for clause in _CLAUSES.split(sentence.text)
        if not _denies(clause)
        for word in re.findall(r"[a-z][\w-]*", clause.lower())
    )


def _denies(clause: str) -> bool:
    return any(word in _DENIERS for word in re.findall(r"[\w']+", clause.lower()))


_CLAUSES = re.compile(r"[;,.:!?]|\s(?:so|because|since|but|while|unless|although)\s", re.I)
_DENIERS = word_set("not never no don't doesn't isn't aren't cannot can't without avoid")
_NONE_MAY_BE = re.compile(
    r"\bno\s+(?:\w+\s+){0,2}?(?P<thing>\w+)\s+(?:may|can|should|must|shall)\s+be\s+"
    r"(?P<done>\w+(?:ed|en))\b",
    re.I,
)


def _verb(word: str) -> str:
    """A verb however inflected, as "committed", "commits" and "commit" meet: its root
    (knowledge.claims) without a doubled last letter."""
    word = root(word)
    return word[:-1] if len(word) > 3 and word[-1] == word[-2] else word


_ABSENT = re.compile(
    r"(?P<name>(?:[\w./@+-]+\s+){0,2}[\w./@+-]+)\s+(?:is|are|was|were)(?:\s+not|n't)\s+"
    r"(?:installed|used|available|supported|a\s+dependency|present|enabled|allowed|needed|"
    r"required|in\s+use)\b",
    re.I,
)


def absent(a: Sentence, b: Sentence, words_b: frozenset[str]) -> Finding | None:
    """``a`` says a named thing is not installed, used or supported where ``b`` relies on
    it ("pytest is not a dependency" / "run tests with pytest")."""
    if first_match(_NEGATED, b.text):
        return None
    for match in all_matches(_ABSENT, a.text):
        said = match.group("name").split()
        names = [
            stem(word.lower())
            for n, word in enumerate(said)
            if word.lower() not in STOPWORDS and (name_like(word) or n == len(said) - 1)
        ]
        if names and all(name in words_b for name in names):
            where = next(t for t in b.tokens if names[-1] in words_of(t.word))
            return Finding(
                POLARITY,
                " ".join(names),
                (a.start + match.start(), a.start + match.end()),
                (where.start, where.end),
            )
    return None


# Where what a denial denies ends: "instead of const for dump_cookie" denies the const.
_BOUNDARY = (
    r"(?:for|in|on|at|with|when|if|because|since|so|to|from|by|into|inside|after|before|"
    r"more|less|fewer|than|longer|matter|only|sooner)\b"
)
_DENY_BEFORE = re.compile(
    r"\b(?:don't|do\s+not|does\s+not|doesn't|never|not|no|no\s+longer|without|avoid|"
    r"stop\s+using|instead\s+of|rather\s+than)\s+((?:(?!"
    + _BOUNDARY
    + r")[\w`'./@:-]*[\w`'/@-]\s+)"
    r"{0,3}(?!" + _BOUNDARY + r")[\w`'./@:-]+)",
    re.I,
)
_DENY_AFTER = re.compile(
    # (a name from its start only: inside a long one every start would be tried)
    r"(?<![\w`'./@:-])([\w`'./@:-]+(?:\s+[\w`'./@:-]+)?)\s+(?:is|are|was|were|has\s+been|"
    r"have\s+been|got)\s+"
    r"(?:not\b|no\s+longer|removed|dropped|deprecated|gone|banned|disabled|retired)",
    re.I,
)

# Code in a denied clause is what is denied: "no BrowserWindow may be created with
# `nodeIntegration: true`", "never call `Variable.get()` at the top level".
_DENY_CODE = re.compile(
    r"\b(?:don't|do\s+not|does\s+not|doesn't|never|no|must\s+not|may\s+not|avoid)\s"
    r"(?:(?!\b(?:when|if|while|because|unless|until)\b)[^;:.!?`]){0,60}`([^`]+)`",
    re.I,
)


@functools.lru_cache(maxsize=1024)
def denied(text: str) -> frozenset[str]:
    """The stems a text denies in so many words: after "don't", "never", "not", "no
    longer", "instead of" (up to four words on), or before "is not", "was removed", "was
    dropped", and the code quoted in a denied clause (not what a bug report mentions:
    "fixes a bug with X" denies nothing)."""
    found: set[str] = set()
    for pattern in (_DENY_BEFORE, _DENY_AFTER, _DENY_CODE):
        for match in pattern.finditer(text):
            words = re.split(r"[\s=]+", match.group(1))
            if pattern is _DENY_BEFORE and match.group(0)[:3].lower() == "no ":
                # "no Service Bus connection strings": the strings, not Service Bus
                named = [n for n, word in enumerate(words) if word[:1].isupper()]
                rest = words[named[-1] + 1 :] if named else []
                if rest and not {word.lower().strip(".,:;") for word in rest} <= _ADVERBS:
                    words = rest
            for word in words:
                found |= words_of(word.strip("`'.,:-").lower())
    return frozenset(found)


_SETTING = re.compile(r"(?<![\w.])([A-Za-z_][\w.]*[A-Za-z_0-9])\s*=\s*[\"']?([\w-]+(?:\.[\w-]+)*)")
_BOOLEAN = {"true", "false", "on", "off", "yes", "no", "enabled", "disabled"}


def _values(text: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for match in _SETTING.finditer(text):
        found.setdefault(match.group(1).lower(), set()).add(match.group(2).lower())
    return found


def settings(a: Sentence, b: Sentence, whole_a: str = "", whole_b: str = "") -> Finding | None:
    """The same setting given another value (``catchup=False`` / ``catchup=True``), where
    neither memory gives it the other's value anywhere (``whole_a``, ``whole_b``: their
    texts)."""
    right = {m.group(1).lower(): m for m in all_matches(_SETTING, b.text)}
    values_a, values_b = _values(whole_a or a.text), _values(whole_b or b.text)
    for left in all_matches(_SETTING, a.text):
        name = left.group(1).lower()
        other = right.get(name)
        if other is None:
            continue
        value_a, value_b = left.group(2).lower(), other.group(2).lower()
        if value_a == value_b or values_a.get(name, set()) & values_b.get(name, set()):
            continue
        kind = POLARITY if value_a in _BOOLEAN and value_b in _BOOLEAN else CHOICE
        if kind == CHOICE and value_a.replace(".", "").isdigit():
            kind = QUANTITY
        return Finding(
            kind,
            left.group(1),
            (a.start + left.start(), a.start + left.end()),
            (b.start + other.start(), b.start + other.end()),
        )
    return None


def opposites(
    a: Sentence,
    b: Sentence,
    words_a: frozenset[str],
    words_b: frozenset[str],
    common: frozenset[str],
    *,
    beside: int = 1,
    orders: bool = True,
) -> Finding | None:
    """Opposite words in two sentences that otherwise say the same ("X is enabled in
    staging" / "X is disabled in staging"). ``beside``: how many of the words they share
    must stand within reach of both opposite words (two: the same phrase, "phased release
    enabled" / "phased release is off", says what they are about on its own), else much
    in common will do; ``orders``: whether "before" / "after" count (not between memories
    alike only in a sentence or two)."""
    # Opposites may be words too common to carry meaning alone ("on", "off").
    said_a = words_a | {base(t.word) for i, t in enumerate(a.tokens) if not _placed(a, i)}
    said_b = words_b | {base(t.word) for i, t in enumerate(b.tokens) if not _placed(b, i)}
    only_a, only_b = said_a - said_b, said_b - said_a
    rest = shared(words_a, words_b, common)
    if len(rest) < 2:
        return None
    # Much in common, or the opposite words beside the same thing on both sides ("with phased
    # release enabled" / "phased release is off").
    alike = len(rest) >= 0.5 * min(len(words_a), len(words_b)) - 1
    for word in sorted(only_a):
        other = OPPOSITE.get(word, set()) & only_b
        if beside > 1 or not orders:
            # An order says when, not whether: "migrate before deploying" and "warm the
            # cache after deploying" are two steps (unless the memories are alike).
            other -= _ORDER
            if word in _ORDER:
                continue
        if not other:
            continue
        found = sorted(other)[0]
        at_a = next(i for i, t in enumerate(a.tokens) if word in (stem(t.word), base(t.word)))
        at_b = next(i for i, t in enumerate(b.tokens) if found in (stem(t.word), base(t.word)))
        near = _near(a, at_a) & _near(b, at_b) & rest
        if len(near) >= beside or (alike and beside <= 1):
            left, right = a.tokens[at_a], b.tokens[at_b]
            return Finding(
                POLARITY,
                " ".join(sorted(near or rest))[:80],
                (left.start, left.end),
                (right.start, right.end),
            )
    return None


_DETERMINERS = word_set(
    "the a an every each all this that these those its our their my your any some no"
)


def _placed(sentence: Sentence, at: int) -> bool:
    """Whether "on" or "off" comes before what it places ("False on every new DAG", "runs on
    Kubernetes", "off the main thread", "on 3 hosts"): a preposition, not a switch
    ("catchup on and ...", "is off", "leave caching on during the migration")."""
    tokens = sentence.tokens
    if tokens[at].word not in ("on", "off") or at + 1 >= len(tokens):
        return False
    following = tokens[at + 1]
    return (
        following.word in _DETERMINERS
        or following.text[:1].isupper()
        or following.text[:1].isdigit()
    )


def _near(sentence: Sentence, at: int, reach: int = 3) -> set[str]:
    """The stems within ``reach`` tokens of token ``at``."""
    tokens = sentence.tokens[max(0, at - reach) : at + reach + 1]
    return {word for token in tokens for word in words_of(token.word)}
