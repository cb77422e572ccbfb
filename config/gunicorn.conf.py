"""gunicorn settings for production and the benchmarks:

    python -m gunicorn -c config/gunicorn.conf.py config.wsgi

The application is loaded once in the master and its objects frozen out of the garbage
collector before the workers fork: a worker's full collections then scan only what requests
create (about 50 ms pauses become a few), and the workers share the loaded code's memory.
"""

from __future__ import annotations

import gc
import os
import shutil
from pathlib import Path

bind = os.environ.get("BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", str(2 * (os.cpu_count() or 1) + 1)))
preload_app = True
accesslog = os.environ.get("ACCESS_LOG") or None
# The access log carries the request id the application sent back (ops.requestid).
# Paths only: a query string can carry what must not be logged (a key sent as ?api_key=).
access_log_format = '%(h)s "%(m)s %(U)s %(H)s" %(s)s %(b)s %(M)sms request_id=%({x-request-id}o)s'
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "warning")
# A worker that stops answering (a stuck request) is replaced after this many seconds.
timeout = int(os.environ.get("WEB_TIMEOUT", "30"))
graceful_timeout = 30
# A statement of a request is cancelled by PostgreSQL well before the worker would be killed
# (config/settings.py): the request then ends in a 503 in the error shape, not a lost worker.
os.environ.setdefault("DATABASE_STATEMENT_TIMEOUT_MS", str(max(1000, min(10, timeout // 2) * 1000)))
keepalive = 5
# gunicorn reads the request line and headers itself, before Django, and refuses what is over
# these limits; its worker here says so in JSON, in the error shape (config/gunicorn_worker.py).
# The request line: gunicorn's largest (above it, 0 only, which means no limit at all).
worker_class = "config.gunicorn_worker.JsonErrorsWorker"
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190

# Metrics of every worker add up (ops.metrics): each writes its samples under this folder,
# emptied when the server starts (this file is read before the application, and
# prometheus_client with it, is loaded).
_metrics_dir = Path(
    os.environ.setdefault(
        "PROMETHEUS_MULTIPROC_DIR",
        str(
            Path(os.environ.get("VAR_DIR", Path(__file__).resolve().parent.parent / "var"))
            / "metrics"
        ),
    )
)

shutil.rmtree(_metrics_dir, ignore_errors=True)
_metrics_dir.mkdir(parents=True)

# No collection while the master imports the application, so its objects stay packed.
gc.disable()


def when_ready(server: object) -> None:
    # The offline embedding model is loaded once here, before the workers fork: they share
    # it, and no request waits for it.
    from knowledge import embeddings

    embeddings.warm()
    # The MCP server (the SDK and its models) too: loaded here, it is frozen with the rest.
    from mcp_http.exchange import server as mcp_server

    mcp_server()


def child_exit(server: object, worker: object) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)  # type: ignore[attr-defined]


def pre_fork(server: object, worker: object) -> None:
    gc.freeze()


def post_fork(server: object, worker: object) -> None:
    gc.enable()
