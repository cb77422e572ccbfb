"""A task's log lines carry its task id where a request's carry the request id."""

from __future__ import annotations

from typing import Any

from celery.signals import task_postrun, task_prerun

from ops import requestid

_tokens: dict[str, Any] = {}


@task_prerun.connect
def _enter(task_id: str | None = None, **kwargs: Any) -> None:
    if task_id:
        _tokens[task_id] = requestid.current.set(task_id)


@task_postrun.connect
def _leave(task_id: str | None = None, **kwargs: Any) -> None:
    token = _tokens.pop(task_id or "", None)
    if token is not None:
        requestid.current.reset(token)
