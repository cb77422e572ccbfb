"""The names a memory mentions, read from its words: pure functions over text, no database.

What counts as an entity (and nothing else: a plain English word never does):

* **paths**: a token with a slash (``src/billing/queue.py``, ``src/billing/``) or a file name
  with a known extension (``queue.py``); a tag glob's literal prefix (``src/core/**`` gives
  ``src/core``);
* **dotted modules**: lower-case identifiers joined by dots (``billing.tasks``), not a file
  name nor a web address;
* **code identifiers**: CamelCase or camelCase (``RetryQueue``, ``getUser``, ``HTTPServer``),
  snake_case and UPPER_SNAKE (``retry_queue``, ``MAX_RETRIES``), a name called (``retry()``),
  a word in a code span (`` `celery` ``);
* **packages**: what ``pip install``/``npm install``/``poetry add`` install, what a line
  ``import x`` or ``from x import`` imports, and ``the x package`` or ``library``;
* **a project's words** (EntityTerm): whole words, in any case, shown as the project spells
  them (``Stripe``).

A sentence "X imports Y" (or "X import Y") between two names found says that X imports Y.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

MAX_NAME = 200
MIN_CODE = 3
EXTENSIONS = (
    "py|pyi|js|mjs|cjs|ts|tsx|jsx|go|rb|java|kt|rs|c|h|cc|cpp|hpp|cs|php|swift|scala|sql|sh"
    "|yaml|yml|json|toml|ini|cfg|conf|md|rst|txt|html|css|scss|vue|lock|env|proto|tf"
)
WEB_ENDINGS = {"com", "org", "net", "io", "dev", "app", "edu", "gov", "co", "uk", "de"}
# Words that a package phrase may catch but never name a package.
NOT_PACKAGES = {
    "a", "an", "the", "this", "that", "new", "same", "whole", "main", "standard", "other",
    "our", "your", "its", "their", "each", "every", "one", "any", "some", "which", "what",
}  # fmt: skip
# Words that end the list of what an install command installs.
INSTALL_STOPS = {
    "then", "and", "to", "for", "in", "on", "with", "before", "after", "first", "again", "or",
    "if", "when", "so", "but", "instead", "from", "into", "the", "a", "an", "is", "was",
}  # fmt: skip
# The kinds, strongest first: a name read twice keeps the strongest reading.
STRENGTH = {"term": 0, "path": 1, "package": 2, "module": 3, "code": 4}

_EDGE = r"(?<![\w/.-])"
_PATH = re.compile(
    _EDGE + r"(?:\.{1,2}/)?(?:[\w.-]+/)+[\w.-]*"  # with a slash
    r"|" + _EDGE + r"[\w-]+(?:\.[\w-]+)*\.(?:" + EXTENSIONS + r")(?![\w-])"  # a file name
)
_MODULE = re.compile(r"(?<![\w./-])[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+(?![\w/-])")
_CODE_SPAN = re.compile(r"`([^`\s]{2,200})`")
_CALL = re.compile(r"(?<![\w.])([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)\(\)")
_WORD = re.compile(r"(?<![\w-])[A-Za-z_][A-Za-z0-9_]*(?![\w-])")
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2,}[a-z]{2,}")
_SNAKE = re.compile(r"[A-Za-z0-9]_[A-Za-z0-9]")
_INSTALL = re.compile(
    r"\b(?:pip3?|uv pip|poetry|npm|yarn|pnpm|gem|cargo|go)\s+(?:install|add|get)\s+"
    r"((?:[-@\w][\w@/.=<>~^-]*[ \t]*)+)",
    re.IGNORECASE,
)
_IMPORT_LINE = re.compile(
    r"(?:^|[\n`;])\s*(?:import\s+([\w.]+)|from\s+([\w.]+)\s+import\b)", re.MULTILINE
)
_PACKAGE_PHRASE = re.compile(
    r"\bthe\s+`?([a-z][\w.-]*)`?\s+(?:package|library)\b|\b(?:package|library)\s+`([\w.-]+)`"
)
_IMPORTS = re.compile(r"(\S+)\s+imports?\s+(?:from\s+)?(\S+)")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`])|\n+")
_TRIM = ".,;:!?)]}'\"`>"


@dataclass
class Names:
    """What one memory mentions: each name by its key (lower case) as (name, kind), and the
    imports read from it (the importer's key to the imported keys)."""

    found: dict[str, tuple[str, str]] = field(default_factory=dict)
    imports: dict[str, set[str]] = field(default_factory=dict)

    def add(self, name: str, kind: str) -> str | None:
        name = name.strip().rstrip(_TRIM).lstrip("([{'\"`<")
        if kind == "path":
            name = name.removeprefix("./").rstrip("/")
        if not name or len(name) > MAX_NAME:
            return None
        key = name.lower()
        held = self.found.get(key)
        if held is None or STRENGTH[kind] < STRENGTH[held[1]]:
            self.found[key] = (name, kind)
        return key


def _code(word: str) -> bool:
    """CamelCase, camelCase, HTTPServer, snake_case or UPPER_SNAKE: never a plain word."""
    if len(word) < MIN_CODE or word.strip("_").isdigit():
        return False
    return bool(_CAMEL.search(word) or _SNAKE.search(word))


def _module(text: str) -> bool:
    parts = text.split(".")
    return (
        len(parts) >= 2
        and parts[-1] not in WEB_ENDINGS
        and len(parts[0]) >= 2
        and all(part and not part.isdigit() for part in parts)
        and not re.fullmatch(r".*\.(?:" + EXTENSIONS + ")", text)
    )


def glob_prefix(tag: str) -> str:
    """A tag glob's literal part, up to its last whole folder: ``src/core/**`` ->
    ``src/core``; ``src/*.py`` -> ``src``; a tag with no slash and no glob is itself."""
    cut = min((i for i, ch in enumerate(tag) if ch in "*?[{"), default=len(tag))
    literal = tag[:cut]
    if cut < len(tag):
        literal = literal.rsplit("/", 1)[0] if "/" in literal else ""
    return literal.rstrip("/")


@functools.lru_cache(maxsize=256)
def _terms_pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    words = sorted({t for t in terms if t.strip()}, key=len, reverse=True)
    if not words:
        return None
    alternatives = "|".join(re.escape(w.strip()) for w in words)
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])", re.IGNORECASE)


def read_text(text: str, names: Names, terms: Sequence[str] = ()) -> None:
    """Add the names ``text`` mentions to ``names``."""
    if not text:
        return
    spans: list[tuple[int, int]] = []
    for match in _PATH.finditer(text):
        token = match.group(0)
        if "://" in text[max(0, match.start() - 3) : match.start() + 3] or token.count("/") == len(
            token
        ):
            continue
        if "/" not in token and not re.search(r"[A-Za-z]", token.rsplit(".", 1)[0]):
            continue  # 1.5.py and the like
        if names.add(token, "path"):
            spans.append(match.span())

    def free(start: int, end: int) -> bool:
        return not any(s <= start < e or s < end <= e for s, e in spans)

    for match in _MODULE.finditer(text):
        if free(*match.span()) and _module(match.group(0).rstrip(".")):
            names.add(match.group(0), "module")
    for match in _INSTALL.finditer(text):
        for word in match.group(1).split():
            if word.lower() in INSTALL_STOPS:
                break  # the sentence goes on: "pip install httpx then restart"
            if word.startswith("-"):
                continue
            package = re.split(r"[=<>~^\[]", word, maxsplit=1)[0]
            if package and package.lower() not in NOT_PACKAGES and not package.isdigit():
                names.add(package, "package")
    for match in _IMPORT_LINE.finditer(text):
        imported = match.group(1) or match.group(2)
        names.add(imported, "module" if "." in imported else "package")
    for match in _PACKAGE_PHRASE.finditer(text):
        package = match.group(1) or match.group(2)
        if package.lower() not in NOT_PACKAGES:
            names.add(package, "module" if _module(package) else "package")
    for match in _CODE_SPAN.finditer(text):
        inner = match.group(1).rstrip("()")
        if re.fullmatch(r"[A-Za-z_][\w.]*", inner) and len(inner) >= 2:
            names.add(inner, "module" if _module(inner) else "code")
    for match in _CALL.finditer(text):
        if free(*match.span()):
            names.add(match.group(1), "module" if _module(match.group(1)) else "code")
    for match in _WORD.finditer(text):
        if free(*match.span()) and _code(match.group(0)):
            names.add(match.group(0), "code")
    pattern = _terms_pattern(tuple(terms))
    if pattern is not None:
        spelled = {t.strip().lower(): t.strip() for t in terms}
        for match in pattern.finditer(text):
            names.add(spelled.get(match.group(0).lower(), match.group(0)), "term")
    _read_imports(text, names)


def _read_imports(text: str, names: Names) -> None:
    """A sentence "X imports Y" between two names found."""
    if "import" not in text.lower():
        return
    for sentence in _SENTENCE.split(text):
        for match in _IMPORTS.finditer(sentence):
            importer = match.group(1).strip(_TRIM + "(").lower()
            imported = match.group(2).strip(_TRIM + "(").lower()
            if importer in names.found and imported in names.found and importer != imported:
                names.imports.setdefault(importer, set()).add(imported)


def read_memory(
    content: str, summary: str, tags: Iterable[str], terms: Sequence[str] = ()
) -> Names:
    """The names a memory mentions, in its content, its summary and its tags."""
    names = Names()
    read_text(content, names, terms)
    if summary:
        read_text(summary, names, terms)
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip():
            continue
        tag = tag.strip()
        if "/" in tag or any(ch in tag for ch in "*?["):
            prefix = glob_prefix(tag)
            if prefix and re.search(r"[A-Za-z]", prefix):
                names.add(prefix, "path")
        else:
            read_text(tag, names, terms)
    return names


def parts(key: str) -> list[str]:
    """The words of a name's key, for search: the key itself, its path segments, its dotted
    and snake parts, and the humps of the name as spelled (``RetryQueue``: retry, queue)."""
    return sorted(set(_parts(key)))


def name_parts(name: str) -> list[str]:
    humps = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+", name)
    found = set(parts(name.lower())) | {h.lower() for h in humps if len(h) >= 2}
    return sorted(found)


def _parts(key: str) -> Iterable[str]:
    yield key
    for piece in re.split(r"[/._\-]+", key):
        if len(piece) >= 2:
            yield piece
