"""gunicorn settings for production and the benchmarks:

    python -m gunicorn -c config/gunicorn.conf.py config.wsgi

The application is loaded once in the master and its objects frozen out of the garbage
collector before the workers fork: a worker's full collections then scan only what requests
create (about 50 ms pauses become a few), and the workers share the loaded code's memory.
"""

from __future__ import annotations

import gc
import os

bind = os.environ.get("BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", str(2 * (os.cpu_count() or 1) + 1)))
preload_app = True
accesslog = os.environ.get("ACCESS_LOG") or None
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "warning")

# No collection while the master imports the application, so its objects stay packed.
gc.disable()


def pre_fork(server: object, worker: object) -> None:
    gc.freeze()


def post_fork(server: object, worker: object) -> None:
    gc.enable()
