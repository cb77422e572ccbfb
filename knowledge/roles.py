"""What a memory says fills a role: "Renderer state is Zustand", "application secrets are
Sealed Secrets", "the local database is Drift on SQLite". Two memories that give one role
two tools in the same way, each never named by the other (or named only to be denied), are
a choice to make (knowledge.contradictions). Pure: text in, findings out."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from knowledge.claims import split
from knowledge.polarity import denied
from knowledge.reading import STOPWORDS, Words, stem, word_set
from knowledge.scopes import SCOPES
from knowledge.versions import same_product

# How a role is said to be filled, by kind: what it is, where it lives or what it reaches
# a thing through ("is", "lives in", "are kept in", "reach the database through"); where it
# is hosted; what manages it; who provides it; what it is written in. Two fillers disagree
# only when said the same way: "is Django" and "is deployed to Heroku", "is written in
# SQL" and "is managed by Flyway", "is S3" and "is provided by AWS" can all hold. What
# stacks is not read: "built with" React and Vite, "runs on" Kubernetes and AWS, traffic
# that "goes through" Cloudflare and Envoy.
_WAYS = {
    "is": r"(?:is|are)(?:\s+(?:kept|stored)\s+in)?|lives?\s+in|"
    r"reach(?:es)?\s+(?P<target>(?:the\s+)?\w+)\s+through",
    "hosted": r"(?:is|are)\s+(?:hosted|deployed)\s+(?:on|to|at|in)",
    "managed": r"(?:is|are)\s+(?:managed|handled)\s+(?:by|with|in)",
    "provided": r"(?:is|are)\s+provided\s+(?:by|from)",
    "written": r"(?:is|are)\s+written\s+(?:in|with)",
}
_FILLED = "|".join(f"(?P<{way}>{pattern})" for way, pattern in _WAYS.items())
# The role: a plain noun phrase that opens the sentence, words in lower case or short
# abbreviations in capitals ("our CDN", "renderer state").
_ROLE_WORD = r"(?:[a-z][a-z-]*|[A-Z]{2,5})"
_ROLE = re.compile(
    rf"^(?:(?:[Tt]he|[Oo]ur|[Aa]ll)\s+)?(?P<role>(?:[A-Z][a-z-]*|{_ROLE_WORD})"
    rf"(?:\s+{_ROLE_WORD}){{0,3}}?)\s+(?:{_FILLED})\s+(?:(?:a|an|the)\s+)?"
    r"(?P<name>[A-Z][\w.-]*(?:\s+[A-Z][\w.-]*){0,2})(?P<after>.{0,12})"
)
# Where a team keeps a role's things, said mid-sentence: "we keep feature flags in
# LaunchDarkly", "we store uploads in S3" (what "feature flags live in Unleash" says).
_KEPT = re.compile(
    rf"^(?:[Ww]e|[Tt]he\s+team)\s+(?:keep|store|put)\s+(?:(?:the|our|all)\s+)?"
    rf"(?P<role>{_ROLE_WORD}(?:\s+{_ROLE_WORD}){{0,3}}?)\s+in\s+(?:(?:a|an|the)\s+)?"
    r"(?P<name>[A-Z][\w.-]*(?:\s+[A-Z][\w.-]*){0,2})(?P<after>.{0,12})"
)
_ARTICLES = word_set("the our all a an")
# Not tools: a scope, a pronoun, a day or a month, a format, a protocol or a standard
# ("timestamps are UTC", "... are ISO-8601 strings", "the bus is AMQP 0-9-1").
_NOT_NAMES = SCOPES | word_set(
    "i it this that we you they one mondays tuesdays wednesdays thursdays fridays saturdays "
    "sundays january february march april may june july august september october november "
    "december"
)
_FORMATS = word_set(
    "utc gmt json yaml toml xml csv html markdown pdf utf-8 utf8 ascii iso iso-8601 rfc amqp "
    "mqtt http https grpc rest graphql sql tcp udp websocket websockets "
    # the language a text is written in ("commit messages are kept in English")
    "english german french spanish portuguese italian dutch japanese chinese korean russian"
)
# What after the name says the role is filled so only in part: for a purpose, for a time,
# or by several ("Prometheus for two weeks", "Elasticsearch until the Q3 cutover",
# "Alice, Bob and Chen").
_PARTLY = re.compile(
    r"^(?:\s+(?:for|until|till|after|before|during|when|while|unless|except|alongside)\b"
    r"|\s*(?:,|\s(?:and|or|&))\s*[A-Z])"
)


@dataclass(frozen=True)
class Role:
    role: frozenset[str]  # the stems of what is filled ("renderer state")
    way: str  # how it is filled: one of _WAYS
    name: str  # what fills it, as written ("Redux Toolkit")
    span: tuple[int, int]  # the sentence that says so
    # what the role reaches, when said ("pods reach Postgres through PgBouncer")
    target: frozenset[str] = frozenset()

    def same_role(self, other: Role) -> bool:
        """One role: the same words, said the same way, reaching the same thing when both
        say what they reach."""
        return (
            self.role == other.role
            and self.way == other.way
            and (self.target == other.target or not (self.target and other.target))
        )


def _stems(phrase: str) -> frozenset[str]:
    return frozenset(stem(w.lower()) for w in phrase.split() if w.lower() not in _ARTICLES)


def roles(text: str) -> list[Role]:
    """Each sentence that begins by saying what fills a role: a plain noun phrase, a verb
    that says "is" or "is kept in", and a name in capitals that fills it as a whole."""
    return list(_roles(text))


@functools.lru_cache(maxsize=4096)
def _roles(text: str) -> tuple[Role, ...]:
    """``roles``, read once per text: the walk compares a memory with several candidates."""
    found = []
    for sentence in split(text):
        match = _ROLE.match(sentence.text) or _KEPT.match(sentence.text)
        if not match or _PARTLY.match(match.group("after")):
            continue
        name = match.group("name").rstrip(".-")
        if name.lower() in _NOT_NAMES or name.split()[0].lower() in _FORMATS:
            continue
        way = next((way for way in _WAYS if match.re is _ROLE and match.group(way)), "is")
        role = _stems(match.group("role"))
        if not role or role <= STOPWORDS:
            continue
        end = sentence.start + len(sentence.text.rstrip())
        target = match.group("target") if match.re is _ROLE else None
        found.append(Role(role, way, name, (sentence.start, end), _stems(target or "")))
    return tuple(found)


def _named(filler: Role, words: Words) -> bool:
    """Whether a memory says a word of a name that is not the role's own ("Redux" of
    "Redux Toolkit", but not "secrets" of "Sealed Secrets" for application secrets), other
    than to deny it ("Typesense, not Algolia")."""
    parts = {stem(part.lower()) for part in re.split(r"[\s.-]+", filler.name) if part}
    return bool((parts - filler.role) & (words.content - denied(words.text)))


def other_fillers(a: Words, b: Words) -> tuple[Role, Role] | None:
    """One role filled the same way by two names, each of which the other memory never
    says."""
    for left in _roles(a.text):
        for right in _roles(b.text):
            if (
                left.same_role(right)
                and not _named(left, b)
                and not _named(right, a)
                # one product by two spellings ("Postgres" / "PostgreSQL")
                and not same_product(left.name.split()[0].lower(), right.name.split()[0].lower())
            ):
                return left, right
    return None
