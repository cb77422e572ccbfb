"""The Celery app: loads Django settings (CELERY_* names) and finds tasks in the apps."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_process_init, worker_process_shutdown

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("memory_layer")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def _ensure_filesystem_broker_folders(sender: Celery, **kwargs: object) -> None:
    """The file-system broker needs its folders before the first message."""
    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if folder := options.get(key):
            os.makedirs(folder, exist_ok=True)


@worker_process_init.connect
def _trace_worker_process(**kwargs: object) -> None:
    """Traces, when an OTLP endpoint is named: in each process that runs tasks, once it is
    started (a prefork pool's child, or the worker itself with ``--pool solo``), so that no
    export thread or connection is shared across a fork."""
    from ops import telemetry

    telemetry.configure()


@worker_process_shutdown.connect
def _flush_worker_traces(**kwargs: object) -> None:
    from ops import telemetry

    telemetry.shutdown()
