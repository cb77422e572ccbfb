"""Repeats and contradictions between two memories (pure: text in, verdict out).

Each text is read by knowledge.reading; this module compares the two readings.

Two memories about the same subject (their embeddings close, or many words shared) are
read side by side, sentence by sentence:

* a **conflict** when a sentence of one and its counterpart in the other make different
  claims about what they share: a different number for the same quantity ("time out after
  10 seconds" / "after 30 seconds"), another version of the same thing ("Python 3.11" /
  "3.12"), one side denying what the other asserts ("run migrations in tests" / "never run
  migrations in tests"), opposite words ("enable" / "disable", "sync" / "async"), a
  declared change ("we moved from pnpm to npm", "X was replaced by Y", "X is deprecated")
  against a memory that still says the old thing, or the one thing they prescribe swapped
  for another ("use pnpm" / "use npm");
* a **repeat** when neither adds anything of substance to the other: the smaller one's
  words are (almost) all in the larger one, and what differs is no number, version, path
  or name;
* otherwise nothing (related but compatible, or unrelated).

Differences about a different scope are not contradictions: the same setting for another
environment ("staging" / "production"), platform or path says something else, not the
opposite. The evidence names what differs, for a reviewer to see at a glance.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from knowledge import exclusive, polarity, repeats, roles, rules, tools, versions
from knowledge.claims import split
from knowledge.reading import (
    NEGATORS,
    NUMBER,
    STOPWORDS,
    Words,
    kin,
    overlap,
    read,
    reports,
    sentences,
    stem,
    word_set,
)
from knowledge.said import Read, said_in
from knowledge.scopes import SCOPE_STEMS, other_scope

REPEAT = "repeat"
CONFLICT = "conflict"


# Opposites, by their stems (see ``stem``): one on each side is a contradiction.
_OPPOSITES = [
    ("enabl", "disabl"),
    ("allow", "deny"),
    ("allow", "block"),
    ("allow", "forbid"),
    ("sync", "async"),
    ("synchronous", "asynchronous"),
    ("synchronously", "asynchronously"),
    ("requir", "optional"),
    ("mandatory", "optional"),
    ("always", "never"),
    ("before", "after"),
    ("increas", "decreas"),
    ("true", "false"),
    ("on", "off"),
    ("includ", "exclud"),
    ("accept", "reject"),
    ("add", "remov"),
    ("keep", "drop"),
    ("keep", "delet"),
    ("public", "private"),
    ("lazy", "eager"),
    ("lazily", "eagerly"),
    ("strict", "lenient"),
    ("upper", "lower"),
    ("larger", "smaller"),
    ("more", "less"),
    ("faster", "slower"),
    ("higher", "lower"),
    ("first", "last"),
    ("start", "stop"),
    ("open", "clos"),
    ("safe", "unsafe"),
    ("supported", "unsupported"),
    ("work", "break"),
    ("pass", "fail"),
    ("succeed", "fail"),
    ("encrypt", "decrypt"),
    ("mutable", "immutable"),
    ("enabled", "disabled"),
    ("inclusive", "exclusive"),
    ("serial", "parallel"),
    ("sequential", "parallel"),
    ("local", "remote"),
    ("manual", "automatic"),
    ("manually", "automatically"),
]
OPPOSITES: dict[str, frozenset[str]] = {}
for _left, _right in _OPPOSITES:
    OPPOSITES[_left] = OPPOSITES.get(_left, frozenset()) | {_right}
    OPPOSITES[_right] = OPPOSITES.get(_right, frozenset()) | {_left}
# Verbs and prepositions before the thing a memory prescribes: "use X", "prefer X", ...
PRESCRIBE = word_set(
    "use uses using prefer prefers preferred choose chose pick adopt adopted rely relies via "
    "switch switched migrate migrated move moved replace replaced"
)


@dataclass(frozen=True)
class Verdict:
    """``kind`` is REPEAT, CONFLICT or None; ``evidence`` says why, for a reviewer."""

    kind: str | None
    similarity: float
    evidence: dict[str, object] = field(default_factory=dict)


def _choices(a: Words, b: Words, *, whole: bool, names_only: bool = False) -> list[dict[str, str]]:
    """A declared change against a memory that still says the old thing (or not the new
    one), or the one thing prescribed swapped for another: what each side says, and what."""
    found: list[dict[str, str]] = []
    # Between memories related only through a name, only a name (an identifier, a version,
    # a capitalised name) retired or brought counts: "dropped the bootstrap" says little
    # about another memory's "bootstrap".
    names = (a.specific | b.specific) if names_only else (a.content | b.content)
    for changed, other in ((a, b), (b, a)):
        still = {
            word
            for word in changed.old & names
            if said_in(other, word) and word not in other.old and word not in other.negated
        }
        brought = {word for word in changed.new & names if word not in other.content}
        if still or (whole and brought and not changed.old and other.content & changed.content):
            found.append({"about": " ".join(sorted(still or brought))})
    swapped = [] if whole and len(a.content) + len(b.content) > 16 else _swapped(a, b)
    if swapped:
        found.append(
            {"about": f"{swapped[0]} / {swapped[1]}", "left": swapped[0], "right": swapped[1]}
        )
    return found


def _swapped(a: Words, b: Words) -> list[str]:
    """A word in the same place after the same prescribing word ("use pnpm" / "use npm"),
    each missing from the other side, neither a scope or a common word."""
    follows_a = _prescribed(a)
    follows_b = _prescribed(b)
    for verb in sorted(set(follows_a) & set(follows_b)):
        left, right = follows_a[verb], follows_b[verb]
        if (
            left != right
            and left not in b.content
            and right not in a.content
            and left not in SCOPE_STEMS
            and right not in SCOPE_STEMS
            and stem(left) not in OPPOSITES.get(stem(right), frozenset())
        ):
            return [left, right]
    return []


def _prescribed(words: Words) -> dict[str, str]:
    """Each prescribing word's object: the first word after it that carries meaning."""
    found: dict[str, str] = {}
    tokens = words.tokens
    for index, token in enumerate(tokens[:-1]):
        if token not in PRESCRIBE:
            continue
        for ahead in tokens[index + 1 : index + 3]:
            if ahead in tools.COUNTS:
                break  # "uses three stages": how many, not what
            if ahead in STOPWORDS or ahead in NEGATORS or NUMBER.match(ahead):
                continue
            found.setdefault(token, stem(ahead))
            break
    return found


# Two sentences are read side by side when they share this many words that carry meaning.
ALIGNED_WORDS = 2
# Two sentences that share this many are about the same thing whatever their numbers measure.
STRONGLY_ALIGNED = 3
# Two memories that share a name or identifier are about the same thing at a lower
# similarity than ``similarity`` asks of the others, but not below this.
NAMED = 0.25
# How sure each class is: a pair is ranked by it (knowledge.pairs).
STRENGTH = {
    rules.VERSION: 0.9, rules.SCHEDULE: 0.9, rules.QUANTITY: 0.8, rules.NAMING: 0.8,
    rules.POLARITY: 0.7, rules.EXCLUSIVITY: 0.6, rules.CHOICE: 0.7,
}  # fmt: skip


def compare(
    a: str,
    b: str,
    *,
    cosine: float | None = None,
    similarity: float = 0.6,
    repeat_overlap: float = 0.7,
    common: frozenset[str] = frozenset(),
) -> Verdict:
    """Whether ``a`` and ``b`` repeat or contradict each other. ``cosine`` is their
    embeddings' (None without a model); ``common`` the stems their neighbourhood shares
    anyway (a history's boilerplate), which say nothing about either. They are compared
    when they are about the same thing: that cosine, or the share of words they share, at
    least ``similarity``; or a name, identifier, tool or version in common and at least
    NAMED; below NAMED, only versions of one product in two sentences alike in words. The
    classes (knowledge.rules, knowledge.exclusive, knowledge.polarity) read them sentence by
    sentence; from NAMED on, a role each fills with a tool the other never names
    (knowledge.roles) is read whatever else they share."""
    whole_a, whole_b = read(a), read(b)
    content_a, content_b = whole_a.content - common, whole_b.content - common
    shared = overlap(content_a, content_b)
    score = max(cosine if cosine is not None else 0.0, shared)
    named = (
        bool((whole_a.specific & whole_b.specific) - common)
        or kin(whole_a.specific - common, whole_b.specific - common)
        or bool(_measured(whole_a) & _measured(whole_b))
        or any(said_in(whole_b, word, common) for word in whole_a.old | whole_a.new)
        or any(said_in(whole_a, word, common) for word in whole_b.old | whole_b.new)
        # a tool one runs (`uv sync`), or prescribes by a name ("use log/slog"), is a name
        or bool(tools.named(whole_a) & content_b)
        or bool(tools.named(whole_b) & content_a)
        or bool(tools.quoted_settings(whole_a) & tools.quoted_settings(whole_b) - common)
    )
    evidence: dict[str, object] = {
        "similarity": round(score, 3),
        "sharedWords": round(shared, 3),
        **({"cosine": round(cosine, 3)} if cosine is not None else {}),
    }
    # Below NAMED, only versions of one product are read: such a version says what it is
    # about, however little else the two share.
    versions_only = score < NAMED
    if versions_only and not _same_products(a, b):
        return Verdict(None, score, evidence)
    close = score >= similarity or named
    history = reports(a) and reports(b)
    findings: list[rules.Finding] = []
    if not history:
        # Below ``similarity``, without a name in common, what names its own subject (a
        # version of one product, a quantity or a schedule of the same words, names), the
        # same phrase with opposite words, and sentences alike in words (``_findings``).
        findings += _findings(
            a,
            b,
            common,
            measured_only=not close,
            close=score >= similarity,
            versions_only=versions_only,
        )
    if close and not history and not versions_only:
        if not other_scope(whole_a, whole_b):
            findings += _denied_names(a, b, whole_a, whole_b, common)
        findings += _choice_findings(
            a, b, whole_a, whole_b, swapped=score >= similarity, names_only=score < similarity
        )
    if not history and not versions_only and not other_scope(whole_a, whole_b, places=False):
        # One role given two tools ("renderer state is Zustand" / "... lives in Redux").
        filled = roles.other_fillers(whole_a, whole_b)
        if filled:
            left, right = filled
            findings.append(
                rules.Finding(rules.CHOICE, f"{left.name} / {right.name}", left.span, right.span)
            )
    only_a = sorted(content_a - content_b)
    only_b = sorted(content_b - content_a)
    evidence["onlyFirst"] = only_a[:12]
    evidence["onlySecond"] = only_b[:12]
    if findings:
        findings = list({(f.kind, f.first, f.second): f for f in findings}.values())
        findings.sort(key=lambda f: -STRENGTH[f.kind])
        evidence["class"] = findings[0].kind
        evidence["classes"] = sorted({f.kind for f in findings})
        evidence["strength"] = STRENGTH[findings[0].kind]
        evidence["differs"] = [f.evidence(a, b) for f in findings[:6]]
        return Verdict(CONFLICT, score, evidence)
    if history:
        # Two entries of a change log repeat each other only word for word: "finished url
        # generation" and "improved url generation" are two events.
        if score >= similarity and content_a == content_b and content_a:
            evidence["class"] = "reworded"
            return Verdict(REPEAT, score, evidence)
        return Verdict(None, score, evidence)
    if score >= similarity and repeats.repeats(whole_a, whole_b, repeat_overlap, cosine, common):
        evidence["class"] = "paraphrase" if shared < repeat_overlap else "reworded"
        return Verdict(REPEAT, score, evidence)
    if score >= similarity:
        # About the same thing, and no rule can tell how they relate: a judge may.
        evidence["undecided"] = True
    return Verdict(None, score, evidence)


def _findings(
    a: str,
    b: str,
    common: frozenset[str],
    *,
    measured_only: bool = False,
    close: bool = False,
    versions_only: bool = False,
) -> list[rules.Finding]:
    """The class rules over every two sentences about the same thing (one from each);
    ``versions_only``: only versions, between sentences that share words."""
    left, right = Read.of(a), Read.of(b)
    found: list[rules.Finding] = []
    for one, words_a, said_a in zip(left.sentences, left.words, left.said, strict=True):
        for other, words_b, said_b in zip(right.sentences, right.words, right.said, strict=True):
            shared = (words_a & words_b) - common
            if other_scope(said_a.reading, said_b.reading, times=False):
                continue
            aligned = len(shared) >= ALIGNED_WORDS
            if versions_only:
                if aligned:
                    found += [
                        finding
                        for finding in rules.measured(said_a, said_b, aligned)
                        if finding.kind == rules.VERSION
                    ]
                continue
            # Versions of one product, quantities and schedules of one thing: their own
            # reading says what they are about.
            strong = len(shared) >= STRONGLY_ALIGNED
            # Between memories not otherwise alike, two sentences with much in common are
            # read as alike ones are, unless each names a thing of its own and none in
            # common ("freeze sets the content length" / "make_conditional no longer sets
            # content lengths": two things).
            alike = strong and not _apart(said_a.reading, said_b.reading)
            found += rules.measured(said_a, said_b, aligned, close, strong, (left, right))
            scoped = other_scope(said_a.reading, said_b.reading)
            if not scoped:
                # A naming rule names its subject too ("branch names start with ...").
                naming = rules.naming(one, other, words_a, words_b, common)
                found += [naming] if naming is not None else []
            if not aligned or scoped:
                continue
            if measured_only and not alike:
                # Memories not otherwise alike: only opposite words beside the same phrase.
                finding = polarity.opposites(one, other, words_a, words_b, common, beside=2)
                found += [finding] if finding is not None else []
                continue
            for finding in (
                polarity.polarity(one, other, words_b),
                _flipped(polarity.polarity(other, one, words_a)),
                polarity.absent(one, other, words_b),
                _flipped(polarity.absent(other, one, words_a)),
                polarity.settings(one, other, a, b),
                polarity.opposites(one, other, words_a, words_b, common, orders=not measured_only),
                exclusive.exclusivity(one, other, words_a, words_b, common),
                exclusive.enumerated(one, other, words_a, words_b, common),
                _flipped(exclusive.enumerated(other, one, words_b, words_a, common)),
                exclusive.inclusive(one, other, words_a, words_b, common),
                _flipped(exclusive.inclusive(other, one, words_b, words_a, common)),
                _flipped(exclusive.exclusivity(other, one, words_b, words_a, common)),
            ):
                if finding is not None:
                    found.append(finding)
    unique: dict[tuple[str, tuple[int, int], tuple[int, int]], rules.Finding] = {}
    for finding in found:
        unique.setdefault((finding.kind, finding.first, finding.second), finding)
    return list(unique.values())


def _apart(a: Words, b: Words) -> bool:
    """Each names something of its own (an identifier, a path, a name in capitals) and
    nothing the other names."""
    return (
        bool(a.specific - b.specific)
        and bool(b.specific - a.specific)
        and not (a.specific & b.specific)
    )


def _denied_names(
    a: str, b: str, whole_a: Words, whole_b: Words, common: frozenset[str]
) -> list[rules.Finding]:
    """A name one side denies ("we don't use Datasets", "Celery beat was removed", "not
    cents") where the other, denying nothing of it, relies on it."""
    found: list[rules.Finding] = []
    # Names: identifiers, paths, names in capitals, and the tools either side prescribes
    # ("use slog", a command's program: `uv sync`), however they are spelled.
    names = (
        whole_a.specific
        | whole_b.specific
        | tools.prescribed(whole_a)
        | tools.prescribed(whole_b)
        | (tools.quoted_settings(whole_a) & tools.quoted_settings(whole_b))
    ) - common
    # About the same thing beyond the name: two more words in common, or one beside an
    # identifier of code (finalize_invoice, allowsBackgroundLocationUpdates) or the program
    # of a command the other runs (`uv sync`), which name one thing only.
    # (a name in common is one written as a name on both sides: "vault" beside "HashiCorp
    # Vault" is a word in common, the denied "ansible-vault" never)
    context = (whole_a.content & whole_b.content) - (whole_a.specific & whole_b.specific) - common
    if not context:
        return found
    code = tools.identifiers(whole_a.text) | tools.identifiers(whole_b.text)
    for denier, other, flip in ((whole_a, whole_b, False), (whole_b, whole_a, True)):
        denied = [
            word
            for word in sorted(
                polarity.denied(denier.text) & other.asserted & names - other.negated
            )
            if (len(context - {word}) >= 2 or word in code or word in tools.commands(other))
            and _relied_on(other.text, word)
        ]
        if denied:
            word = denied[0]
            left, right = _span_of(denier.text, word), _span_of(other.text, word)
            found.append(
                rules.Finding(rules.POLARITY, word, right, left)
                if flip
                else rules.Finding(rules.POLARITY, word, left, right)
            )
    return found


def _relied_on(text: str, word: str) -> bool:
    """Whether a sentence of ``text`` says ``word`` with no harm and no denial beside it."""
    for sentence in sentences(text):
        said = read(sentence)
        if word in said.content and not said.denies and not (said.content & polarity.HARM):
            return True
    return False


def _flipped(finding: rules.Finding | None) -> rules.Finding | None:
    if finding is None:
        return None
    return rules.Finding(
        finding.kind, finding.about, finding.second, finding.first, finding.strength
    )


def _choice_findings(
    a: str, b: str, whole_a: Words, whole_b: Words, *, swapped: bool, names_only: bool
) -> list[rules.Finding]:
    """A declared change or a swapped prescription (``_choices``), with the sentences that
    say them as spans."""
    if other_scope(whole_a, whole_b):
        return []
    found = []
    # Each prescribes a tool the other never names, in sentences about the same thing ("use
    # pnpm for installs" / "install dependencies with `npm ci`").
    for left in sorted(tools.prescribed(whole_a) - whole_b.content):
        for right in sorted(tools.prescribed(whole_b) - whole_a.content):
            if len(_words_beside(a, left) & _words_beside(b, right)) >= STRONGLY_ALIGNED:
                found.append(
                    rules.Finding(
                        rules.CHOICE, f"{left} / {right}", _span_of(a, left), _span_of(b, right)
                    )
                )
                break
        if found:
            break
    for choice in _choices(whole_a, whole_b, whole=True, names_only=names_only):
        if "left" in choice and not swapped:
            continue
        found.append(
            rules.Finding(
                rules.CHOICE,
                choice["about"],
                _span_of(a, choice.get("left") or choice["about"]),
                _span_of(b, choice.get("right") or choice["about"]),
            )
        )
    return found


def _words_beside(text: str, word: str) -> frozenset[str]:
    """The words of the sentences of ``text`` that say ``word``, but it."""
    read_ = Read.of(text)
    return frozenset().union(*(words for words in read_.words if word in words)) - {word}


def _span_of(text: str, about: str) -> tuple[int, int]:
    """The sentence of ``text`` that says one of ``about``'s words (the first one)."""
    for sentence in split(text):
        lowered = sentence.text.lower()
        if any(word and word in lowered for word in about.lower().replace("/", " ").split()):
            return sentence.start, sentence.start + len(sentence.text.rstrip())
    return 0, len(text)


def _same_products(a: str, b: str) -> bool:
    """Whether the two give versions of one product ("ESP-IDF v5.1.x" / "idf:v5.2.1")."""
    products_a = {v.product for said in Read.of(a).said for v in said.versions}
    products_b = {v.product for said in Read.of(b).said for v in said.versions}
    return any(versions.same_product(x, y) for x in products_a for y in products_b)


def _measured(words: Words) -> set[str]:
    """What a text gives a version or a measure of (a value with a unit or a dot): a name
    that two texts share only through such values is the same subject ("Airflow 2.7.3" /
    "Airflow 2.9.1"); a bare count says too little ("method 600")."""
    return {what for what, unit, value in words.numbers if what and (unit or "." in value)}
