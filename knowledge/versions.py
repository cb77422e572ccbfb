"""Versions: a product's version or constraint read as a range ("12 and newer" is
[12, ∞), "~> 1.5" is [1.5, 1.6), "3.11" is 3.11.*), and whether two of one product can both
hold (a pin outside the other's range cannot; one inside it can). Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

from knowledge.claims import NUMBER_WORDS, RATES, UNITS, Sentence
from knowledge.reading import stem, word_set

_VERSION = re.compile(r"^v?(\d+(?:\.\d+){0,3})(\+|\.x|\.\*)?$")
_OPERATORS = {
    ">=": "min", "=>": "min", ">": "above", "<=": "max", "<": "below",
    "~>": "pessimistic", "~=": "pessimistic", "^": "caret", "==": "pin", "=": "pin",
}  # fmt: skip
_NEWER = ("and newer", "or newer", "and later", "or later", "and above", "or above", "or higher",
          "and higher", "and up", "onwards", "or greater", "+")  # fmt: skip
_AT_LEAST = ("at least", "minimum", "min", "requires", "require", "required", "msrv", "floor",
             "minimum version", "no older than", "needs", "need")  # fmt: skip
# A version required as it is: "has to be PostgreSQL 15", "must be Python 3.11".
_EXACTLY = ("has to be", "have to be", "must be", "must stay", "must remain")
# A version kept where it is, whatever else is supported: "keep Electron pinned at 27.x",
# "Ruby stays on 3.2" (it disagrees with another version in use, not with a range).
_KEPT = ("pinned at", "pinned to", "pin at", "pin to", "locked at", "locked to", "held at",
         "held on", "stay on", "stays on", "stay at", "stays at")  # fmt: skip
_AT_LEAST_SAID, _EXACTLY_SAID, _KEPT_SAID = (
    re.compile(r"\b(?:" + "|".join(map(re.escape, phrases)) + r")\b")
    for phrases in (_AT_LEAST, _EXACTLY, _KEPT)
)
_PRODUCT_SKIP = word_set(
    "to on at is was be version versions v from of the a an with in for runs run uses use "
    "using require requires required support supports pinned pin pins at least minimum min "
    "newer ready this that it stay stays stayed held hold holds locked lock keep kept remain "
    "remains needs need constrained constrain constrains limited capped restricted must should"
)
_VERSION_SETTING = re.compile(r"version|major|minor|release")
# A part that is a product of its own, not the noun a name qualifies: "the Python client
# is pinned to 1.4" is the client's version, "the Kotlin compiler" Kotlin's.
_COMPONENTS = word_set(
    "client sdk library lib plugin package driver binding bindings module extension action "
    "operator chart provider image wrapper adapter connector cli app"
)
# The words of a version setting's name that name no product.
_SETTING_WORDS = frozenset(
    ("", "version", "required", "min", "minimum", "max", "maximum", "target", "lowest")
)
_INNER = re.compile(r"^(?:[\w.-]+/)*([a-z][a-z0-9_-]*?)(?:[:=@]|==|>=|~=|-)v?(\d+(?:\.\d+){1,3})")
INFINITY = (10**9,)
# Numbered references, not products: "RFC 2068", "section 4.4.1", "PEP 8".
_REFERENCES = word_set(
    "rfc section pep iso chapter issue step page figure table line draft appendix item rule "
    "part run pr ticket"
)


@dataclass(frozen=True)
class Version:
    product: str
    low: tuple[int, ...]
    high: tuple[int, ...] | None  # exclusive; None: no upper bound
    pin: bool  # a version stated, not a constraint
    span: tuple[int, int]
    context: frozenset[str] = frozenset()  # the words of its sentence
    required: bool = False  # said as what is needed ("requires", "has to be", "at least")
    kept: bool = False  # said as kept where it is ("pinned at", "stays on")


def _parts(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def _bump(parts: tuple[int, ...], at: int) -> tuple[int, ...]:
    at = max(0, min(at, len(parts) - 1))
    return (*parts[:at], parts[at] + 1)


def versions(sentence: Sentence) -> list[Version]:
    tokens = sentence.tokens
    context = frozenset(stem(t.word) for t in tokens if t.word[:1].isalpha())
    found: list[Version] = []
    lowered = sentence.text.lower()
    for index, token in enumerate(tokens):
        inner = _INNER.match(token.word)
        if inner:  # python:3.11-slim, django==4.2, torch-2.2.2
            product, text = inner.groups()
            parts = _parts(text)
            found.append(
                Version(
                    product, parts, _bump(parts, len(parts) - 1), True, (token.start, token.end)
                )
            )
            continue
        match = _VERSION.match(token.word)
        at = token.start - sentence.start
        if not match or (at and sentence.text[at - 1] in "#(-"):
            continue  # an issue (#442), not a version
        text, plus = match.groups()
        operator = tokens[index - 1].word if index and tokens[index - 1].word in _OPERATORS else ""
        dotted = "." in text
        product_at = index - (2 if operator else 1)
        while product_at >= 0 and (
            tokens[product_at].word in _PRODUCT_SKIP or tokens[product_at].word in _OPERATORS
        ):
            product_at -= 1
        if product_at < 0 or product_at < index - 5:
            continue
        # A setting of a version that names no product ("required_version", not
        # "minimum_chrome_version") has it named before it by a capitalised name ("Terraform
        # required_version", "pin Terraform with required_version"), or is its own product
        # ("every root module pins required_version").
        setting = tokens[product_at].word
        if "version" in setting and _SETTING_WORDS.issuperset(re.split(r"[-_.]", setting)):
            named = next(
                (
                    at
                    for at in range(product_at - 1, max(-1, product_at - 4), -1)
                    if tokens[at].word[:1].isalpha()
                    and tokens[at].word not in _PRODUCT_SKIP
                    and tokens[at].text[:1].isupper()
                    # a sentence's first word is a name only right before the setting
                    and (at > 0 or product_at == 1)
                ),
                None,
            )
            product_at = product_at if named is None else named
        # a name before the noun it qualifies: "the Kotlin compiler is locked to 1.9.22"
        if (
            product_at > 1  # a sentence's first word is a verb as often as a name
            and tokens[product_at].text.islower()
            and tokens[product_at].word not in _COMPONENTS
            and tokens[product_at - 1].text[:1].isupper()
            and tokens[product_at - 1].word.isalpha()
        ):
            product_at -= 1
        product = tokens[product_at]
        if (
            not product.word[:1].isalpha()
            or product.word in UNITS
            or product.word in NUMBER_WORDS
            or stem(product.word) in _REFERENCES
        ):
            continue
        after = index + 1 < len(tokens) and tokens[index + 1].word
        if after and (after in UNITS or after in RATES):
            continue  # a quantity
        tail = lowered[token.end - sentence.start : token.end - sentence.start + 14]
        head = lowered[max(0, product.start - sentence.start - 14) : token.start - sentence.start]
        newer = plus == "+" or any(tail.lstrip().startswith(p) for p in _NEWER if p != "+")
        least = bool(_AT_LEAST_SAID.search(head) or re.match(r"(?:min|minimum|lowest)_", setting))
        exactly = bool(_EXACTLY_SAID.search(head))
        # A capitalised name, not the capital that starts the sentence ("Add 0.12 ...").
        capital = product_at > 0 and (product.text[:1].isupper() or product.text.isupper())
        if "_" in product.text and not _VERSION_SETTING.search(product.word) and not dotted:
            # a setting given a number, not a version: `REMINDER_LEAD_HOURS = 24`, `MAX_RETRIES
            # = 5` (unless its name says so: `NODE_VERSION = 20`, `NODE_MAJOR=20`)
            operator = "" if operator in ("=", "==") else operator
            capital = False
        # A setting of a version says so by its name ("minimum_chrome_version to 116").
        named_setting = "version" in setting
        kept = bool(_KEPT_SAID.search(head))  # "Postgres is pinned to 15"
        if not (dotted or operator or newer or least or capital or plus or named_setting or kept):
            continue
        parts = _parts(text)
        kind = _OPERATORS.get(operator, "")
        if (kind in ("min", "above") or newer or least) and plus not in (".x", ".*"):
            low, high, pin = parts, None, False
        elif kind == "pessimistic":
            low, high, pin = parts, _bump(parts, len(parts) - 2), False
        elif kind == "caret":
            low, high, pin = parts, _bump(parts, 0), False
        elif kind in ("max", "below"):
            low, high, pin = (0,), parts if kind == "below" else _bump(parts, len(parts) - 1), False
        else:
            # "3.11" and "2.0.x" say which one is used ("needs v2.x": that series); "3.11+" is
            # a bound
            low, high, pin = parts, _bump(parts, len(parts) - 1), plus != "+"
        span = sentence.span(product_at, index)
        required = least or exactly
        found.append(Version(stem(product.word), low, high, pin, span, context, required, kept))
    return found


def same_product(a: str, b: str) -> bool:
    """One product by its names: "postgres" and "postgresql", "esp-idf" and "idf",
    "minimum_chrome_version" and "chrome"."""
    if a == b or (min(len(a), len(b)) >= 4 and (a.startswith(b) or b.startswith(a))):
        return True
    # a package in its scope and without it: "@supabase/supabase-js" and "supabase-js"
    # (never two scopes' own: "@angular/core" and "@nestjs/core")
    if ("/" in a) != ("/" in b) and a.rsplit("/", 1)[-1] == b.rsplit("/", 1)[-1]:
        return True
    parts_a, parts_b = set(re.split(r"[-_.]", a)), set(re.split(r"[-_.]", b))
    return (a in parts_b and len(a) >= 3) or (b in parts_a and len(b) >= 3)


def _contains(outer: Version, inner: Version) -> bool:
    (low, high), (inner_low, inner_high) = _range(outer), _range(inner)
    return low <= inner_low and (inner_high or INFINITY) <= (high or INFINITY)


def versions_disagree(a: Version, b: Version) -> bool:
    """Two statements of one product's version that cannot both hold."""
    if not (
        same_product(a.product, b.product) or (a.product in b.context and b.product in a.context)
    ):
        return False
    if a.pin and b.pin:
        return not (_contains(a, b) or _contains(b, a))
    if a.pin != b.pin:
        pin, bound = (a, b) if a.pin else (b, a)
        if pin.required:
            # "has to be PostgreSQL 15" / "supports PostgreSQL 12 and newer": what each
            # admits differs
            return _range(pin) != _range(bound)
        return not _contains(bound, pin)
    return _range(a) != _range(b)


def _range(version: Version) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """What a version admits, written without trailing zeros (">= 1.7.0" is ">= 1.7")."""
    return _trimmed(version.low), None if version.high is None else _trimmed(version.high)


def _trimmed(parts: tuple[int, ...]) -> tuple[int, ...]:
    while len(parts) > 1 and parts[-1] == 0:
        parts = parts[:-1]
    return parts
