"""Secrets in what agents write: found before anything is stored.

What an agent learns can carry what it saw: an API key in a log line, a password in a
connection string. Memory text is rendered into other agents' prompts and shown to
reviewers, so it must hold no secret. Every free text a client writes (a memory's content,
summary and tags, a run's title, external id and write scope, a change's ref and paths, the
reason of an edit, a flag, a rejection, a supersede or a decision) is scanned line by line
as a person reads it, through its disguises (memories.folding: invisible characters,
letters of other scripts that look Latin, tokens split by one space), by Yelp's
detect-secrets (its provider detectors: AWS, GitHub, GitLab, Slack, Stripe, OpenAI, JWTs,
private keys, credentials in URLs, quoted secret assignments, and more, with its
false-positive filters), and by a few rules of our own for what it does not cover: unquoted
assignments (``DB_PASSWORD=...``, ``api_key: ...``), newer key formats and this service's
own API keys. A project's policy then rejects the write (a 400 that says where and what
kind, never what) or redacts each finding before storage (recorded in the history).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from django.core.exceptions import ValidationError

from memories.folding import joined, latin, visible

# detect-secrets plugins that name what they find. Its entropy detectors are left out: on
# prose they flag ordinary words.
_PLUGINS = (
    "AWSKeyDetector",
    "ArtifactoryDetector",
    "AzureStorageKeyDetector",
    "BasicAuthDetector",
    "CloudantDetector",
    "DiscordBotTokenDetector",
    "GitHubTokenDetector",
    "GitLabTokenDetector",
    "IbmCloudIamDetector",
    "IbmCosHmacDetector",
    "JwtTokenDetector",
    "KeywordDetector",
    "MailchimpDetector",
    "NpmDetector",
    "OpenAIDetector",
    "PrivateKeyDetector",
    "PypiTokenDetector",
    "SendGridDetector",
    "SlackDetector",
    "SoftlayerDetector",
    "SquareOAuthDetector",
    "StripeDetector",
    "TelegramBotTokenDetector",
    "TwilioKeyDetector",
)

_NAME = (
    r"[A-Za-z0-9_.\-]*"
    r"(?:password|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key"
    r"|credentials?)"
    r"[A-Za-z0-9_\-]*"
)
# Our own rules: (kind, pattern, group holding the secret).
_RULES: tuple[tuple[str, re.Pattern[str], int], ...] = (
    ("Memory Layer API Key", re.compile(r"\bml_[0-9a-f]{8}_[A-Za-z0-9_\-]{20,}"), 0),
    ("OpenAI Key", re.compile(r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}"), 0),
    ("Anthropic Key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}"), 0),
    ("Google API Key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), 0),
    ("Hugging Face Token", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), 0),
    (
        "GitHub Token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})"),
        0,
    ),
    (
        "Authorization Header",
        re.compile(
            r"(?i)\b(?:proxy-)?authorization\s*[:=]\s*(?:basic|bearer|token|digest|negotiate)"
            r"\s+([A-Za-z0-9+/=._\-~]{8,})"
        ),
        1,
    ),
    (
        "Secret Assignment",
        # NAME=value or NAME: value, unquoted, 8+ characters that are not a reference
        # (${VAR}, $VAR, <placeholder>, a call, an attribute such as os.environ[...]).
        re.compile(
            rf"(?i)\b{_NAME}\s*[:=]\s*(?![$<{{(\[]|os\.|env|process\.|settings\.)"
            r"([^\s'\"`,;(){}\[\]<>]{8,})"
        ),
        1,
    ),
)
# A value an assignment rule found that is in fact a word, a placeholder or a path.
_NOT_A_SECRET = re.compile(
    r"(?i)^(?:[a-z]+\d{0,2}(?:[_\-.][a-z]+\d{0,2})*|x+|\*+|\.+|changeme|placeholder"
    r"|redacted.*|none|null|true|false|/.*)$"
)
# A token goes on to the left through these, to the right also through / and = (base64).
_TOKEN_LEFT = re.compile(r"[A-Za-z0-9_\-.+~]")
_TOKEN_RIGHT = re.compile(r"[A-Za-z0-9_\-.+/=~]")
_PRIVATE_KEY_END = re.compile(r"-----END[A-Z ]*PRIVATE KEY( BLOCK)?-----")


@dataclass(frozen=True)
class Finding:
    """A secret found in one field: where it is (1-based line and column) and what it looks
    like. The secret itself is never kept."""

    field: str
    kind: str
    line: int
    column: int
    start: int
    end: int

    def where(self) -> str:
        return f"{self.kind} at line {self.line}, column {self.column}"


@cache
def _configure() -> None:
    from detect_secrets.settings import configure_settings_from_baseline

    configure_settings_from_baseline({"plugins_used": [{"name": name} for name in _PLUGINS]})


def _detector_spans(line: str) -> Iterator[tuple[str, int, int]]:
    from detect_secrets.core.scan import scan_line

    _configure()
    for found in scan_line(line):
        value = found.secret_value or ""
        start = line.find(value) if value else -1
        if start < 0:
            continue
        end = start + len(value)
        if found.type != "Private Key":
            # Some detectors report only part of a token (a prefix): take the whole token.
            while start > 0 and _TOKEN_LEFT.match(line[start - 1]):
                start -= 1
            while end < len(line) and _TOKEN_RIGHT.match(line[end]):
                end += 1
            while end > start + len(value) and line[end - 1] == ".":  # a sentence's end
                end -= 1
        yield found.type, start, end


def _rule_spans(line: str) -> Iterator[tuple[str, int, int]]:
    for kind, pattern, group in _RULES:
        position = 0
        while (match := pattern.search(line, position)) is not None:
            value = match.group(group)
            named = kind == "Secret Assignment" and value[-1] in ":="
            if group and (named or _NOT_A_SECRET.match(value)):
                # Not a secret, but perhaps the name of one ("secret: aws_secret_access_key
                # = ...", "password: db_password: ..."): look again from the value on.
                position = match.start(group)
                continue
            yield kind, match.start(group), match.end(group)
            position = match.end()


# Detectors whose tokens have shapes of their own (a prefix, a length): looked for in tokens
# split by spaces too. The others name a secret by what stands before it, or match too
# loosely (a prefix of two letters) for runs of words put together.
_SPLIT_PLUGINS = (
    "AWSKeyDetector",
    "AzureStorageKeyDetector",
    "DiscordBotTokenDetector",
    "GitHubTokenDetector",
    "GitLabTokenDetector",
    "JwtTokenDetector",
    "OpenAIDetector",
    "PypiTokenDetector",
    "SendGridDetector",
    "SlackDetector",
    "SquareOAuthDetector",
    "StripeDetector",
)


@cache
def _split_tokens() -> tuple[re.Pattern[str], dict[str, str]]:
    """One pattern for every token shape of ``_SPLIT_PLUGINS`` and of our own token rules,
    and the kind each of its named groups finds."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    plugins: dict[str, Any] = get_mapping_from_secret_type_to_class()
    shapes: list[tuple[str, re.Pattern[str]]] = [
        (kind, pattern)
        for kind in sorted(plugins)
        if plugins[kind].__name__ in _SPLIT_PLUGINS
        for pattern in plugins[kind]().denylist
    ]
    shapes += [(kind, pattern) for kind, pattern, group in _RULES if group == 0]
    kinds, alternatives = {}, []
    for index, (kind, pattern) in enumerate(shapes):
        kinds[f"k{index}"] = kind
        flags = "i" if pattern.flags & re.IGNORECASE else ""
        # Tried only where a token may start (folding.Joined.starts): no \b needed there.
        shape = pattern.pattern.removeprefix("\\b")
        alternatives.append(f"(?P<k{index}>(?{flags}:{shape}))")
    return re.compile("|".join(alternatives)), kinds


def _split_spans(line: str) -> Iterator[tuple[str, int, int]]:
    """Tokens split by single spaces: found where a token may start in runs put together
    (folding.joined), across a space taken out; the span is the whole pieces it touches,
    spaces included."""
    pattern, kinds = _split_tokens()
    for run in joined(line):
        after = 0
        for position, reach in run.starts():
            if position < after:
                continue
            match = pattern.match(run.text, position, reach)
            if match is not None and run.crosses(match.start(), match.end()):
                start, end = run.piece(match.start(), match.end())
                yield kinds[match.lastgroup or ""], start, end
                after = match.end()


def scan(text: str, field: str) -> list[Finding]:
    """The secrets in ``text`` as a person reads it (``visible``: positions are in that
    form), first to last, overlapping findings merged (the first kind found names them). It
    is read with confusable letters in Latin and with tokens split by one space put together
    (memories.folding). A private key runs from its BEGIN line to its END line."""
    shown = visible(text)
    read = latin(shown)
    spans: list[tuple[int, int, str]] = []
    offset = 0
    for line in read.text.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        for kind, start, end in [*_detector_spans(bare), *_rule_spans(bare), *_split_spans(bare)]:
            if kind == "Private Key":
                start = bare.find("-----BEGIN") if "-----BEGIN" in bare else start
                closing = _PRIVATE_KEY_END.search(read.text, offset + end)
                end = (closing.end() if closing else len(read.text)) - offset
            spans.append((*read.span(offset + start, offset + end), kind))
        offset += len(line)
    merged: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(spans):
        if merged and start < merged[-1][1]:
            first_start, first_end, first_kind = merged[-1]
            merged[-1] = (first_start, max(first_end, end), first_kind)
        else:
            merged.append((start, end, kind))
    findings = []
    for start, end, kind in merged:
        number = shown.count("\n", 0, start) + 1
        column = start - (shown.rfind("\n", 0, start) + 1) + 1
        findings.append(Finding(field, kind, number, column, start, end))
    return findings


def redact(text: str, findings: list[Finding]) -> str:
    """``text`` with each finding replaced by ``[REDACTED <kind>]``."""
    parts, last = [], 0
    for finding in sorted(findings, key=lambda f: f.start):
        parts += [text[last : finding.start], f"[REDACTED {finding.kind}]"]
        last = finding.end
    return "".join([*parts, text[last:]])


class SecretsPolicy:
    REJECT = "reject"
    REDACT = "redact"
    CHOICES = ((REJECT, "Reject the write"), (REDACT, "Redact before storage"))


@dataclass
class Scrubbed:
    """The fields as they may be stored, and what was redacted from them."""

    values: dict[str, str | list[str]]
    redacted: list[Finding]

    def note(self) -> str:
        """For the history: where each redaction was, never what it was."""
        if not self.redacted:
            return ""
        places = "; ".join(f"{f.field}: {f.where()}" for f in self.redacted)
        return f"Secrets redacted before storage ({places})."


_HINT = (
    "Store a reference to where the secret is kept (e.g. the name of its environment "
    "variable), not the secret."
)


def scrub(values: dict[str, str | list[str]], mode: str) -> Scrubbed:
    """Scan each field (a string, or a list of strings such as tags); with ``mode`` reject,
    raise a ValidationError naming each field and where its secrets are; with redact,
    return the fields with the secrets replaced."""
    findings: dict[str, list[Finding]] = {}
    scrubbed: dict[str, str | list[str]] = {}
    redacted: list[Finding] = []
    for name, value in values.items():
        items = value if isinstance(value, list) else [value]
        cleaned = []
        for index, item in enumerate(items):
            label = f"{name}[{index}]" if isinstance(value, list) else name
            found = scan(item, label)
            if found:
                findings.setdefault(name, []).extend(found)
                redacted.extend(found)
            # A redacted value is stored as it reads (the positions are in that form).
            cleaned.append(redact(visible(item), found) if found else item)
        scrubbed[name] = cleaned if isinstance(value, list) else cleaned[0]
    if findings and mode != SecretsPolicy.REDACT:
        raise ValidationError(
            {
                name: [
                    "Looks like a secret: "
                    + "; ".join(
                        (f"{f.field}: " if f.field != name else "") + f.where() for f in found
                    )
                    + f". {_HINT}"
                ]
                for name, found in findings.items()
            }
        )
    return Scrubbed(scrubbed, redacted)
