"""An optional judge model for the pairs of memories the rules cannot decide.

With ``CONFLICT_JUDGE_URL`` and ``CONFLICT_JUDGE_MODEL`` set, ``configured()`` gives a
Judge: an OpenAI-compatible chat completions endpoint (Ollama, vLLM, llama.cpp's server)
asked, for each undecided pair, whether the two texts conflict, repeat or are compatible,
with the words that disagree and a reason (knowledge.judge_protocol says how). Without them,
``configured()`` is None and the rules alone decide.

* An answer is kept (JudgeAnswer) for the two texts' content hashes, in either order, and
  the model: the same two texts are never asked of the same model twice. One query reads the
  cached answers of a ``decide()`` call, one insert adds the new ones.
* Each question asked costs one call of the job run's Budget; a cached answer costs none.
* A timeout, a server error or an answer that is not the JSON asked for is no answer (the
  rules stand), logged and counted (knowledge.metrics). After STOP_AFTER failures in a row
  the server is asked nothing more in that ``decide()`` call.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from knowledge import judge_protocol as protocol
from knowledge.metrics import JUDGE_QUESTIONS
from knowledge.models import JudgeAnswer

logger = logging.getLogger(__name__)

# Failures (timeouts, errors) in a row after which a decide() call stops asking.
STOP_AFTER = 3
# The most of an answer read: four short fields fit many times over.
MAX_ANSWER_BYTES = 1 << 20

ANSWERED = "answered"
CACHED = "cached"
TIMEOUT = "timeout"
ERROR = "error"
BAD_ANSWER = "bad_answer"
OVER_BUDGET = "over_budget"

# The endpoints that answered 400 to a JSON schema: asked for plain JSON from then on, for
# the life of the process.
_JSON_OBJECT_ONLY: set[str] = set()


@dataclass(frozen=True)
class Question:
    """One pair the rules could not decide: ``first`` the content of the memory with the
    smaller id, each with its memory's ``content_hash``."""

    first: str
    second: str
    first_hash: str
    second_hash: str

    @property
    def pair(self) -> tuple[str, str]:
        return (self.first_hash, self.second_hash)


@dataclass(frozen=True)
class Answer:
    """What the model said: ``verdict`` (conflict, repeat or compatible), the words of each
    text that disagree (a piece of that text as it spells it, or ''), a one-sentence
    ``reason``; ``cached`` when it was said before (no call made)."""

    verdict: str
    first_span: str
    second_span: str
    reason: str
    model: str
    cached: bool


class Budget:
    """How many calls one job run may still make of the judge model; shared by every
    ``decide()`` call of the run (and safe to share between threads)."""

    def __init__(self, calls: int) -> None:
        self._left = max(0, int(calls))
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls) -> Budget:
        """A job run's budget: CONFLICT_JUDGE_CALLS."""
        return cls(settings.CONFLICT_JUDGE_CALLS)

    @property
    def left(self) -> int:
        return self._left

    def take(self) -> bool:
        """Spend one call; False (and nothing spent) when none is left."""
        with self._lock:
            if self._left <= 0:
                return False
            self._left -= 1
            return True


def pair_key(first_hash: str, second_hash: str) -> str:
    """The cache key of two texts, whichever comes first: the sha256 of their content hashes
    in sorted order."""
    low, high = sorted((first_hash, second_hash))
    return hashlib.sha256(f"{low}:{high}".encode()).hexdigest()


def configured() -> Judge | None:
    """The judge model of the settings; None when CONFLICT_JUDGE_URL is unset or empty."""
    url = (getattr(settings, "CONFLICT_JUDGE_URL", "") or "").strip()
    if not url:
        return None
    model = (getattr(settings, "CONFLICT_JUDGE_MODEL", "") or "").strip()
    if not model:
        raise ImproperlyConfigured(
            "CONFLICT_JUDGE_URL is set but CONFLICT_JUDGE_MODEL is not: set "
            "CONFLICT_JUDGE_MODEL to the model the endpoint serves, or unset CONFLICT_JUDGE_URL."
        )
    return Judge(
        url,
        model,
        api_key=settings.CONFLICT_JUDGE_API_KEY,
        timeout=float(settings.CONFLICT_JUDGE_TIMEOUT),
    )


class _Failed(Exception):
    def __init__(self, outcome: str, why: str, status: int | None = None) -> None:
        super().__init__(why)
        self.outcome = outcome
        self.status = status


class Judge:
    """An OpenAI-compatible chat completions endpoint asked about pairs of memories."""

    def __init__(self, url: str, model: str, *, api_key: str = "", timeout: float = 20.0):
        self.endpoint = protocol.endpoint(url)
        self.model = model
        self.api_key = api_key
        self.timeout = timeout

    def decide(
        self, questions: Sequence[Question], *, budget: Budget
    ) -> dict[tuple[str, str], Answer]:
        """The model's answers to ``questions``, keyed by (first_hash, second_hash); a
        question with no usable answer (a timeout, an error, a bad answer, no budget left)
        is absent, and the rules decide it."""
        asked = list({question.pair: question for question in questions}.values())
        if not asked:
            return {}
        keys = {question.pair: pair_key(*question.pair) for question in asked}
        stored = {
            row.key: row
            for row in JudgeAnswer.objects.filter(key__in=set(keys.values()), model=self.model)
        }
        fresh: dict[str, JudgeAnswer] = {}
        answers: dict[tuple[str, str], Answer] = {}
        failures = left_out = 0
        for question in asked:
            key = keys[question.pair]
            if key in stored:
                JUDGE_QUESTIONS.labels(CACHED).inc()
                answers[question.pair] = self._from_row(stored[key], question, cached=True)
                continue
            if key not in fresh:  # (the same two texts the other way round: asked once)
                if failures >= STOP_AFTER:
                    left_out += 1
                    continue
                if not budget.take():
                    JUDGE_QUESTIONS.labels(OVER_BUDGET).inc()
                    continue
                outcome, reading = self._ask(question)
                JUDGE_QUESTIONS.labels(outcome).inc()
                failures = failures + 1 if outcome in (TIMEOUT, ERROR) else 0
                if reading is None:
                    continue
                fresh[key] = self._row(key, reading, question)
            answers[question.pair] = self._from_row(fresh[key], question, cached=False)
        if left_out:
            logger.warning(
                "judge model %s failed %d times in a row: %d more pairs left to the rules",
                self.model,
                STOP_AFTER,
                left_out,
            )
        if fresh:
            JudgeAnswer.objects.bulk_create(list(fresh.values()), ignore_conflicts=True)
        return answers

    # --- the cache ---------------------------------------------------------------------------

    def _row(self, key: str, reading: protocol.Reading, question: Question) -> JudgeAnswer:
        """An answer as kept: spans by the sorted order of the content hashes."""
        flipped = question.first_hash > question.second_hash
        spans = (reading.first_span, reading.second_span)
        low, high = spans[::-1] if flipped else spans
        return JudgeAnswer(
            key=key,
            model=self.model,
            verdict=reading.verdict,
            low_span=low,
            high_span=high,
            reason=reading.reason,
        )

    def _from_row(self, row: JudgeAnswer, question: Question, *, cached: bool) -> Answer:
        flipped = question.first_hash > question.second_hash
        first, second = (row.high_span, row.low_span) if flipped else (row.low_span, row.high_span)
        return Answer(
            verdict=row.verdict,
            first_span=protocol.span_in(first, question.first),
            second_span=protocol.span_in(second, question.second),
            reason=row.reason,
            model=self.model,
            cached=cached,
        )

    # --- the call ----------------------------------------------------------------------------

    def _ask(self, question: Question) -> tuple[str, protocol.Reading | None]:
        """One question: (outcome, the answer read, or None)."""
        try:
            content = self._complete(question)
            return ANSWERED, protocol.read_answer(content, question.first, question.second)
        except protocol.BadAnswer as error:
            logger.warning(
                "judge model %s gave a bad answer (%s); the rules stand", self.model, error
            )
            return BAD_ANSWER, None
        except _Failed as error:
            logger.warning(
                "judge model %s at %s: %s; the rules stand", self.model, self.endpoint, error
            )
            return error.outcome, None

    def _complete(self, question: Question) -> str:
        """The text of the model's answer. A server that refuses a JSON schema (400) is asked
        once more, and from then on, for plain JSON."""
        schema = self.endpoint not in _JSON_OBJECT_ONLY
        body = protocol.request_body(self.model, question.first, question.second, schema=schema)
        try:
            return protocol.message_content(self._post(body))
        except _Failed as error:
            if not (schema and error.status == 400):
                raise
        _JSON_OBJECT_ONLY.add(self.endpoint)
        logger.info("judge model %s refused a JSON schema: asking for plain JSON", self.model)
        body = protocol.request_body(self.model, question.first, question.second, schema=False)
        return protocol.message_content(self._post(body))

    def _post(self, body: dict[str, Any]) -> Any:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            self.endpoint, data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read(MAX_ANSWER_BYTES + 1)
        except urllib.error.HTTPError as error:
            error.close()
            raise _Failed(ERROR, f"HTTP {error.code}", status=error.code) from None
        except urllib.error.URLError as error:
            if isinstance(error.reason, TimeoutError):
                raise _Failed(TIMEOUT, f"no answer within {self.timeout:g} s") from None
            raise _Failed(ERROR, f"unreachable ({error.reason})") from None
        except TimeoutError:
            raise _Failed(TIMEOUT, f"no answer within {self.timeout:g} s") from None
        except (OSError, http.client.HTTPException) as error:
            raise _Failed(ERROR, f"failed ({error!r})") from None
        if len(raw) > MAX_ANSWER_BYTES:
            raise protocol.BadAnswer(f"an answer over {MAX_ANSWER_BYTES} bytes")
        try:
            return json.loads(raw)
        except ValueError:
            raise protocol.BadAnswer("the response is not JSON") from None
