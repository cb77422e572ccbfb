"""Compressors: a shorter form of a memory's content at about a target number of tokens.

The default is extractive and deterministic: it keeps the sentences that carry the most of
the memory's own vocabulary, in their original order. ``MEMORY_COMPRESSOR=llm`` asks an
OpenAI-compatible chat completions endpoint instead (``MEMORY_COMPRESSOR_URL``,
``MEMORY_COMPRESSOR_MODEL``, ``MEMORY_COMPRESSOR_API_KEY``); an answer that fails, is empty
or is not shorter falls back to the extractive form, so a job never stalls on the endpoint.
"""

from __future__ import annotations

import json
import logging
import math
import re
import urllib.error
import urllib.request
from collections import Counter
from functools import cache
from typing import Protocol

from django.conf import settings

from memories.tokens import count_tokens

logger = logging.getLogger(__name__)

_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|$)")
_WORD = re.compile(r"\w+")
# Words that carry nothing on their own.
_STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "because",
        "but",
        "by",
        "for",
        "from",
        "has",
        "have",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "so",
        "that",
        "the",
        "then",
        "there",
        "these",
        "this",
        "to",
        "was",
        "were",
        "when",
        "which",
        "while",
        "will",
        "with",
    ]
)


class Compressor(Protocol):
    name: str

    def compress(self, text: str, target_tokens: int) -> str:
        """A shorter text of about ``target_tokens`` tokens (the text itself if it cannot be)."""
        ...


def sentences(text: str) -> list[str]:
    return [match.group().strip() for match in _SENTENCE.finditer(text) if match.group().strip()]


def _words(sentence: str) -> list[str]:
    return [w for w in _WORD.findall(sentence.casefold()) if w not in _STOP_WORDS]


class ExtractiveCompressor:
    """Score each sentence by how often the memory repeats its words (normalised by the
    square root of its length, so a long sentence does not win by length alone), the first
    sentence counting double as the memory's lead; keep the best ones that fit the target, at
    least one, and return them in their original order."""

    name = "extractive"

    def compress(self, text: str, target_tokens: int) -> str:
        parts = sentences(text)
        if len(parts) < 2:
            return text
        frequency = Counter(word for part in parts for word in _words(part))

        def score(index: int) -> float:
            words = _words(parts[index])
            weight = sum(frequency[word] for word in words) / math.sqrt(len(words) or 1)
            return weight * (2.0 if index == 0 else 1.0)

        order = sorted(range(len(parts)), key=lambda index: (-score(index), index))
        kept: list[int] = []
        used = 0
        for index in order:
            cost = count_tokens(parts[index] + " ")
            if kept and used + cost > target_tokens:
                break
            kept.append(index)
            used += cost
        shorter = " ".join(parts[index] for index in sorted(kept))
        return shorter if count_tokens(shorter) < count_tokens(text) else text


class ChatCompletionsCompressor:
    """An OpenAI-compatible endpoint's summary, checked: empty, failed or not shorter
    answers fall back to ``fallback``."""

    name = "llm"

    def __init__(
        self,
        url: str,
        model: str,
        api_key: str = "",
        timeout: float = 30.0,
        fallback: Compressor | None = None,
    ) -> None:
        self.url = url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.fallback = fallback or ExtractiveCompressor()

    def _ask(self, text: str, target_tokens: int) -> str:
        body = {
            "model": self.model,
            "temperature": 0,
            "messages": [
                {
                    "role": "system",
                    "content": (
                        "Shorten the note below to at most "
                        f"{target_tokens} tokens. Keep every instruction, path, name and "
                        "number that matters; drop repetition. Answer with the note only."
                    ),
                },
                {"role": "user", "content": text},
            ],
        }
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            answer = json.load(response)
        return str(answer["choices"][0]["message"]["content"]).strip()

    def compress(self, text: str, target_tokens: int) -> str:
        try:
            shorter = self._ask(text, target_tokens)
        except (OSError, urllib.error.URLError, ValueError, KeyError, IndexError, TypeError):
            logger.warning("compression endpoint failed; using the extractive form", exc_info=True)
            return self.fallback.compress(text, target_tokens)
        if not shorter or count_tokens(shorter) >= count_tokens(text):
            return self.fallback.compress(text, target_tokens)
        return shorter


@cache
def configured_compressor() -> Compressor:
    if settings.MEMORY_COMPRESSOR == "llm":
        return ChatCompletionsCompressor(
            settings.MEMORY_COMPRESSOR_URL,
            settings.MEMORY_COMPRESSOR_MODEL,
            settings.MEMORY_COMPRESSOR_API_KEY,
            settings.MEMORY_COMPRESSOR_TIMEOUT,
        )
    return ExtractiveCompressor()
