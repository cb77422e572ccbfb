"""The tools' API calls, made in process: they reuse the key the ``/mcp`` request
authenticated (vouched for in the WSGI environ, where no request from outside can put
anything), count once against the key's limits, and cost no statement or Redis call that
the same ``/context`` call would not."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import httpx2 as httpx
import pytest
import redis
from django.db.backends.utils import CursorWrapper
from django.test import RequestFactory
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from api import slots
from api.auth import VOUCHED, ApiKeyAuthentication, Vouched
from memories import services
from tests.factories import MemoryFactory, ProjectFactory

pytestmark = pytest.mark.django_db(transaction=True)

HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


@pytest.fixture
def alpha():
    project = ProjectFactory(slug="alpha")
    api_key, token = services.api_key_create(project=project, name="agent")
    return project, api_key, token


def _recall(base_url: str, token: str, intent: str = "anything") -> dict[str, Any]:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "recall", "arguments": {"intent": intent}},
    }
    answer = httpx.post(
        f"{base_url}/mcp",
        json=message,
        headers={"Authorization": f"Bearer {token}", **HEADERS},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]


@pytest.mark.parametrize(
    "header", ["Memory-Layer.Vouched-Key", "memory_layer.vouched_key", "Vouched-Key"]
)
def test_no_header_vouches_for_a_key(live_server, alpha, header):
    project, _, token = alpha
    for authorization in ("Bearer ml_nope_nope", ""):
        answer = httpx.post(
            f"{live_server.url}/api/projects/{project.slug}/context",
            json={"tokenBudget": 500},
            headers={"Authorization": authorization, header: token},
        )
        assert answer.status_code == 401, answer.text


def test_a_vouched_key_holds_only_for_its_own_token(alpha, django_assert_num_queries):
    _, api_key, token = alpha
    _, other_key = services.api_key_create(project=ProjectFactory(), name="other")
    authentication = ApiKeyAuthentication()

    def request(token: str, vouched: object) -> Request:
        raw = RequestFactory().get("/", HTTP_AUTHORIZATION=f"Bearer {token}")
        raw.META[VOUCHED] = vouched
        return Request(raw)

    with django_assert_num_queries(0):  # the outer request looked the key up
        assert authentication.authenticate(request(token, Vouched(api_key)))[1] is api_key
    # Another key's token is looked up as any: it is that key, never the vouched one.
    found = authentication.authenticate(request(other_key, Vouched(api_key)))[1]
    assert found.pk != api_key.pk
    # A token that is not the vouched key's, and an entry that is not a Vouched, prove nothing.
    wrong_secret = token[: token.rindex("_") + 1] + "x" * 20
    for token_, vouched in ((wrong_secret, Vouched(api_key)), ("ml_nope_nope", str(api_key))):
        with pytest.raises(AuthenticationFailed):
            authentication.authenticate(request(token_, vouched))


def test_a_tool_call_counts_once_against_the_keys_limits(live_server, alpha, settings, monkeypatch):
    _, api_key, token = alpha
    settings.API_THROTTLE_RATE = "3/day"
    settings.API_KEY_CONCURRENCY = 1  # a call holding two slots would be refused
    taken: list[str] = []
    take = slots.take

    def counting_take(ident: str, limit: int) -> slots.Lease | bool:
        taken.append(ident)
        return take(ident, limit)

    monkeypatch.setattr(slots, "take", counting_take)

    results = [_recall(live_server.url, token) for _ in range(4)]

    assert [result.get("isError", False) for result in results] == [False, False, False, True]
    assert "429" in results[3]["content"][0]["text"] or "hrottl" in results[3]["content"][0]["text"]
    # One slot a call (DRF asks every throttle: the refused call took one too, and gave it
    # back), and none for the /mcp request itself.
    assert Counter(taken) == Counter({f"throttle_inflight_key:{api_key.prefix}": 4})


class _Tally:
    """Statements and Redis commands, in every thread (the live server's, the tools')."""

    def __init__(self) -> None:
        self.statements = 0
        self.redis = 0
        self.lock = threading.Lock()

    def add(self, what: str) -> None:
        with self.lock:
            setattr(self, what, getattr(self, what) + 1)

    def settled(self) -> tuple[int, int]:
        """The counts once nothing has been added for a moment (the work the API does
        after sending its answer included)."""
        last = None
        while (now := (self.statements, self.redis)) != last:
            last = now
            time.sleep(0.3)
        return now


def test_an_mcp_recall_costs_what_the_context_call_costs(live_server, alpha, settings, monkeypatch):
    project, _, token = alpha
    settings.ASSEMBLY_CACHE_SECONDS = 0  # both assemble
    for n in range(5):
        MemoryFactory(project=project, content=f"Rule {n} of the checkout.", tags=["checkout"])
    tally = _Tally()
    execute, command = CursorWrapper._execute_with_wrappers, redis.Redis.execute_command

    def counted_execute(self: CursorWrapper, *args: Any, **kwargs: Any) -> Any:
        tally.add("statements")
        return execute(self, *args, **kwargs)

    def counted_command(self: redis.Redis, *args: Any, **kwargs: Any) -> Any:
        tally.add("redis")
        return command(self, *args, **kwargs)

    monkeypatch.setattr(CursorWrapper, "_execute_with_wrappers", counted_execute)
    monkeypatch.setattr(redis.Redis, "execute_command", counted_command)

    def context() -> None:
        answer = httpx.post(
            f"{live_server.url}/api/projects/{project.slug}/context",
            json={"tokenBudget": 2000, "intent": "checkout", "ids": True},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert answer.status_code == 200, answer.text

    context()
    assert not _recall(live_server.url, token, "checkout").get("isError")  # warm both paths
    before = tally.settled()
    context()
    after_context = tally.settled()
    assert not _recall(live_server.url, token, "checkout").get("isError")
    after_recall = tally.settled()

    context_cost = (after_context[0] - before[0], after_context[1] - before[1])
    recall_cost = (after_recall[0] - after_context[0], after_recall[1] - after_context[1])
    assert context_cost[0] > 0
    assert recall_cost == context_cost
