"""The optional judge model, against a real HTTP server on loopback that speaks the OpenAI
chat completions protocol (as Ollama, vLLM and llama.cpp's server do), answers as scripted
and records what it was sent."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test.utils import CaptureQueriesContext

from knowledge import judge
from knowledge.judge import Answer, Budget, Judge, Question
from knowledge.metrics import JUDGE_QUESTIONS
from knowledge.models import JudgeAnswer

TEN = "HTTP client calls to the billing API time out after 10 seconds."
THIRTY = "HTTP client calls to the Billing API time out after 30 seconds in production."
MODEL = "qwen2.5:7b-instruct"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def question(first: str = TEN, second: str = THIRTY) -> Question:
    return Question(
        first=first, second=second, first_hash=digest(first), second_hash=digest(second)
    )


def verdict(
    kind: str = "conflict",
    first_span: str = "after 10 seconds",
    second_span: str = "after 30 seconds",
    reason: str = "The same timeout is 10 s in one and 30 s in the other.",
) -> str:
    return json.dumps(
        {"verdict": kind, "first_span": first_span, "second_span": second_span, "reason": reason}
    )


def chat(content: str) -> dict[str, Any]:
    """A chat completion as the servers send it."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 200, "completion_tokens": 40, "total_tokens": 240},
    }


class Server:
    """A chat completions server on 127.0.0.1: each POST takes the next scripted reply
    (status, JSON body or raw text, seconds to wait first), the last one again when they run
    out; ``received`` holds each request's path, headers and body."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, Any, float]] = [(200, chat(verdict()), 0.0)]
        self.received: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                server.received.append(
                    {"path": self.path, "headers": dict(self.headers), "body": json.loads(body)}
                )
                status, reply, delay = (
                    server.replies.pop(0) if len(server.replies) > 1 else server.replies[0]
                )
                time.sleep(delay)
                raw = reply.encode() if isinstance(reply, str) else json.dumps(reply).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except OSError:
                    pass  # the client gave up waiting

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def script(self, *replies: tuple[int, Any] | tuple[int, Any, float]) -> None:
        self.replies = [(r[0], r[1], r[2] if len(r) > 2 else 0.0) for r in replies]

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    running = Server()
    yield running
    running.stop()


@pytest.fixture(autouse=True)
def _fresh_process() -> Iterator[None]:
    judge._JSON_OBJECT_ONLY.clear()
    yield
    judge._JSON_OBJECT_ONLY.clear()


def judge_of(server: Server, **kwargs: Any) -> Judge:
    return Judge(server.base, MODEL, **{"timeout": 5.0, **kwargs})


def counted(outcome: str) -> float:
    return JUDGE_QUESTIONS.labels(outcome)._value.get()


@pytest.mark.django_db
def test_a_good_answer_is_read_with_its_spans_as_the_texts_spell_them(server):
    # The model copies "billing" in lower case: the answer keeps the text's "Billing".
    server.script((200, chat(verdict(second_span="the billing API time out after 30 seconds"))))
    asked = question()
    before = counted("answered")
    answers = judge_of(server).decide([asked], budget=Budget(5))
    assert answers == {
        (asked.first_hash, asked.second_hash): Answer(
            verdict="conflict",
            first_span="after 10 seconds",
            second_span="the Billing API time out after 30 seconds",
            reason="The same timeout is 10 s in one and 30 s in the other.",
            model=MODEL,
            cached=False,
        )
    }
    assert counted("answered") == before + 1
    row = JudgeAnswer.objects.get()
    assert (row.key, row.model, row.verdict) == (judge.pair_key(*asked.pair), MODEL, "conflict")


@pytest.mark.django_db
def test_the_request_is_a_strict_json_schema_chat_completion_at_temperature_zero(server):
    judge_of(server, api_key="sk-local").decide([question()], budget=Budget(5))
    (request,) = server.received
    body = request["body"]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-local"
    assert body["model"] == MODEL
    assert body["temperature"] == 0
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert TEN in body["messages"][1]["content"]
    assert THIRTY in body["messages"][1]["content"]
    system = body["messages"][0]["content"]
    assert all(word in system for word in ("conflict", "repeat", "compatible", "verbatim"))
    assert body["response_format"]["type"] == "json_schema"
    schema = body["response_format"]["json_schema"]
    assert schema["strict"] is True
    assert schema["name"]
    assert schema["schema"]["properties"]["verdict"]["enum"] == ["compatible", "conflict", "repeat"]
    assert set(schema["schema"]["required"]) == {"verdict", "first_span", "second_span", "reason"}
    assert schema["schema"]["additionalProperties"] is False


@pytest.mark.django_db
def test_no_key_sends_no_authorization(server):
    judge_of(server).decide([question()], budget=Budget(5))
    assert "Authorization" not in server.received[0]["headers"]


@pytest.mark.django_db
@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/", "/v1/chat/completions"])
def test_the_url_may_be_the_base_its_v1_or_the_full_endpoint(server, suffix):
    answers = Judge(server.base + suffix, MODEL).decide([question()], budget=Budget(1))
    assert len(answers) == 1
    assert [r["path"] for r in server.received] == ["/v1/chat/completions"]


@pytest.mark.django_db
@pytest.mark.parametrize("texts", [(TEN, THIRTY), (THIRTY, TEN)])
def test_a_cached_answer_is_no_request_and_costs_no_budget(
    server, texts, django_assert_num_queries
):
    spans = {TEN: "after 10 seconds", THIRTY: "after 30 seconds"}
    server.script((200, chat(verdict(first_span=spans[texts[0]], second_span=spans[texts[1]]))))
    asked = question(*texts)
    judge_of(server).decide([asked], budget=Budget(5))
    assert len(server.received) == 1
    # Asked again the other way round (the other memory first), with no budget left.
    flipped = Question(asked.second, asked.first, asked.second_hash, asked.first_hash)
    budget = Budget(0)
    before = counted("cached")
    with django_assert_num_queries(1):  # one SELECT, nothing to insert
        answers = judge_of(server).decide([flipped], budget=budget)
    assert len(server.received) == 1
    assert budget.left == 0
    assert counted("cached") == before + 1
    answer = answers[flipped.pair]
    assert answer.cached is True
    assert (answer.first_span, answer.second_span) == (spans[texts[1]], spans[texts[0]])
    # Another model has not answered it: it is asked.
    Judge(server.base, "llama3.1:8b").decide([asked], budget=Budget(1))
    assert len(server.received) == 2


@pytest.mark.django_db
def test_one_select_and_one_insert_for_all_the_questions_of_a_call(server):
    questions = [question(f"{TEN} ({n})", THIRTY) for n in range(4)]
    with CaptureQueriesContext(connection) as queries:
        judge_of(server).decide(questions, budget=Budget(10))
    statements = [q["sql"].split()[0] for q in queries.captured_queries]
    assert statements == ["SELECT", "INSERT"]
    assert JudgeAnswer.objects.count() == 4


@pytest.mark.django_db
def test_the_budget_bounds_the_calls_across_decide_calls(server):
    budget = Budget(3)
    before = counted("over_budget")
    first = judge_of(server).decide([question(f"a {n} {TEN}") for n in range(2)], budget=budget)
    second = judge_of(server).decide([question(f"b {n} {TEN}") for n in range(2)], budget=budget)
    assert (len(first), len(second)) == (2, 1)
    assert len(server.received) == 3
    assert budget.left == 0
    assert counted("over_budget") == before + 1


@pytest.mark.django_db
def test_a_timeout_is_no_answer(server):
    server.script((200, chat(verdict()), 1.0))
    before = counted("timeout")
    started = time.monotonic()
    answers = judge_of(server, timeout=0.5).decide([question()], budget=Budget(5))
    assert answers == {}
    assert time.monotonic() - started < 0.95
    assert counted("timeout") == before + 1
    assert not JudgeAnswer.objects.exists()


@pytest.mark.django_db
def test_a_server_that_does_not_take_the_connection_in_time_is_a_timeout():
    # A listening socket whose queue is full: the connection is never accepted.
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(0)
        port = listening.getsockname()[1]
        waiting = [socket.socket() for _ in range(3)]
        for one in waiting:
            one.setblocking(False)
            one.connect_ex(("127.0.0.1", port))
        before = counted("timeout")
        answers = Judge(f"http://127.0.0.1:{port}", MODEL, timeout=0.5).decide(
            [question()], budget=Budget(5)
        )
        for one in waiting:
            one.close()
    assert answers == {}
    assert counted("timeout") == before + 1


@pytest.mark.django_db
def test_a_server_error_is_no_answer(server):
    server.script((500, {"error": {"message": "model crashed"}}))
    before = counted("error")
    assert judge_of(server).decide([question()], budget=Budget(5)) == {}
    assert counted("error") == before + 1
    assert len(server.received) == 1  # a 500 is not retried


@pytest.mark.django_db
def test_an_unreachable_server_is_no_answer():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    before = counted("error")
    answers = Judge(f"http://127.0.0.1:{port}", MODEL, timeout=1).decide(
        [question()], budget=Budget(5)
    )
    assert answers == {}
    assert counted("error") == before + 1


@pytest.mark.django_db
def test_a_400_to_the_json_schema_is_asked_again_for_plain_json_and_remembered(server):
    server.script(
        (400, {"error": "response_format json_schema unsupported"}), (200, chat(verdict()))
    )
    answers = judge_of(server).decide([question()], budget=Budget(1))
    assert len(answers) == 1
    formats = [r["body"]["response_format"] for r in server.received]
    assert formats == [formats[0], {"type": "json_object"}]
    assert formats[0]["type"] == "json_schema"
    # The process remembers: the next question goes straight to plain JSON.
    judge_of(server).decide([question(THIRTY, TEN + " Really.")], budget=Budget(1))
    assert server.received[-1]["body"]["response_format"] == {"type": "json_object"}
    assert len(server.received) == 3


@pytest.mark.django_db
def test_a_400_to_plain_json_too_is_an_error(server):
    server.script((400, {"error": "bad request"}))
    assert judge_of(server).decide([question()], budget=Budget(1)) == {}
    assert len(server.received) == 2


@pytest.mark.django_db
@pytest.mark.parametrize(
    "content",
    [
        "The two notes conflict.",  # not JSON
        '["conflict"]',  # not an object
        verdict(kind="contradiction"),  # no such verdict
        json.dumps({"verdict": "conflict", "first_span": "", "second_span": ""}),  # no reason
        json.dumps({"first_span": "", "second_span": "", "reason": "r"}),  # no verdict
        json.dumps({"verdict": 1, "first_span": "", "second_span": "", "reason": "r"}),
        json.dumps({"verdict": "repeat", "first_span": None, "second_span": "", "reason": "r"}),
        '{"verdict": "conflict", "first_span": "after 10',  # cut short
    ],
)
def test_a_bad_answer_is_no_answer_and_is_logged_with_the_model(server, content, caplog):
    server.script((200, chat(content)))
    before = counted("bad_answer")
    assert judge_of(server).decide([question()], budget=Budget(1)) == {}
    assert counted("bad_answer") == before + 1
    assert not JudgeAnswer.objects.exists()
    warning = next(r for r in caplog.records if r.name == "knowledge.judge")
    assert warning.levelname == "WARNING"
    assert MODEL in warning.getMessage()
    assert "10 seconds" not in warning.getMessage()  # never the memories' words


@pytest.mark.django_db
@pytest.mark.parametrize("envelope", ["not json at all", {"choices": []}, chat(None)])
def test_a_response_that_is_no_chat_completion_is_no_answer(server, envelope):
    server.script((200, envelope))
    assert judge_of(server).decide([question()], budget=Budget(1)) == {}


@pytest.mark.django_db
def test_a_code_fence_around_the_answer_is_dropped(server):
    server.script((200, chat(f"```json\n{verdict()}\n```")))
    assert len(judge_of(server).decide([question()], budget=Budget(1))) == 1


@pytest.mark.django_db
def test_a_span_not_in_its_text_is_empty(server):
    server.script((200, chat(verdict(first_span="after ten seconds", second_span="30 seconds"))))
    asked = question()
    answer = judge_of(server).decide([asked], budget=Budget(1))[asked.pair]
    assert (answer.first_span, answer.second_span) == ("", "30 seconds")
    assert answer.verdict == "conflict"


@pytest.mark.django_db
def test_a_long_reason_is_cut_to_one_short_sentence(server):
    server.script((200, chat(verdict(reason="word " * 200))))
    asked = question()
    answer = judge_of(server).decide([asked], budget=Budget(1))[asked.pair]
    assert len(answer.reason) <= 300


@pytest.mark.django_db
def test_three_failures_in_a_row_stop_the_asking_for_that_call(server):
    server.script((500, {"error": "down"}))
    questions = [question(f"{n} {TEN}") for n in range(6)]
    budget = Budget(10)
    assert judge_of(server).decide(questions, budget=budget) == {}
    assert len(server.received) == 3
    assert budget.left == 7  # the questions not asked cost nothing
    # The next call asks again.
    server.script((200, chat(verdict())))
    assert len(judge_of(server).decide(questions[:1], budget=budget)) == 1


@pytest.mark.django_db
def test_a_bad_answer_between_failures_starts_the_count_again(server):
    server.script((500, {}), (500, {}), (200, chat("nonsense")), (500, {}), (500, {}), (500, {}))
    questions = [question(f"{n} {TEN}") for n in range(8)]
    judge_of(server).decide(questions, budget=Budget(10))
    assert len(server.received) == 6


def test_no_url_is_no_judge(settings):
    settings.CONFLICT_JUDGE_URL = ""
    assert judge.configured() is None


def test_the_settings_make_the_judge(settings):
    settings.CONFLICT_JUDGE_URL = "http://127.0.0.1:11434"
    settings.CONFLICT_JUDGE_MODEL = MODEL
    settings.CONFLICT_JUDGE_API_KEY = "sk-local"
    settings.CONFLICT_JUDGE_TIMEOUT = 7
    settings.CONFLICT_JUDGE_CALLS = 12
    made = judge.configured()
    assert made is not None
    assert (made.endpoint, made.model, made.api_key, made.timeout) == (
        "http://127.0.0.1:11434/v1/chat/completions",
        MODEL,
        "sk-local",
        7.0,
    )
    assert Budget.from_settings().left == 12


def test_a_url_without_a_model_says_what_to_set(settings):
    settings.CONFLICT_JUDGE_URL = "http://127.0.0.1:11434"
    settings.CONFLICT_JUDGE_MODEL = ""
    with pytest.raises(ImproperlyConfigured, match="set CONFLICT_JUDGE_MODEL"):
        judge.configured()


def start_settings(**variables: str) -> subprocess.CompletedProcess[str]:
    """Read the settings in a fresh process with these variables (and no judge ones else)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONFLICT_JUDGE_")}
    env["DATABASE_URL"] = "postgres://nobody@127.0.0.1:1/none"  # parsed, never reached
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from config import settings as s;"
            " print(repr(s.CONFLICT_JUDGE_URL), s.CONFLICT_JUDGE_TIMEOUT, s.CONFLICT_JUDGE_CALLS)",
        ],
        cwd=Path(__file__).resolve().parents[2],
        env={**env, **variables},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_service_refuses_to_start_with_a_url_and_no_model():
    started = start_settings(CONFLICT_JUDGE_URL="http://127.0.0.1:11434")
    assert started.returncode != 0
    assert "ImproperlyConfigured" in started.stderr
    assert "set CONFLICT_JUDGE_MODEL" in started.stderr
    assert "or unset CONFLICT_JUDGE_URL" in started.stderr


def test_without_a_url_the_rules_decide_alone_and_the_defaults_hold():
    started = start_settings()
    assert started.returncode == 0, started.stderr
    assert started.stdout.split() == ["''", "20", "50"]
