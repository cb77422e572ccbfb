"""Run the whole service in the foreground: web server, Celery worker and Celery beat."""

from __future__ import annotations

import os
import shutil
import signal
import sys
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

# How long the processes have to stop after Ctrl-C (the worker finishes its task and closes
# its connections) before they are killed.
STOP_SECONDS = 30
# Exit codes honcho gives a stop by Ctrl-C (SIGINT) or SIGTERM: a stop asked for, not a crash.
ASKED_TO_STOP = {130, 143}


class Command(BaseCommand):
    help = "Run the web server, a Celery worker and Celery beat together (Ctrl-C stops all)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--addr", default="127.0.0.1:8000", help="host:port of the web server")

    def handle(self, *args: Any, addr: str, **options: Any) -> None:
        from honcho import manager as honcho
        from honcho.manager import Manager

        honcho.KILL_WAIT = STOP_SECONDS

        self.collect_static_files()

        # Web, worker and beat write their metrics to one folder, added up by /metrics.
        metrics_dir = settings.VAR_DIR / "metrics"
        shutil.rmtree(metrics_dir, ignore_errors=True)
        metrics_dir.mkdir(parents=True)
        env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir)}

        # `exec` makes each service the process honcho signals and waits for.
        python = f"exec {sys.executable}"
        manager = Manager()
        # honcho asks a process group to stop; the worker's own pool processes are in it and
        # would be stopped under it (an error in its log). Ask each service alone: the worker
        # then stops its pool itself. (Killing, after STOP_SECONDS, is still of the group.)
        manager._procmgr.terminate = lambda pid: os.kill(pid, signal.SIGTERM)
        manager.add_process("web", f"{python} manage.py runserver {addr} --noreload", env=env)
        manager.add_process(
            "worker",
            f"{python} -m celery -A config worker --loglevel INFO --concurrency 2",
            env=env,
        )
        manager.add_process("beat", f"{python} -m celery -A config beat --loglevel INFO", env=env)
        self.stdout.write(
            self.style.SUCCESS(
                f"\nMemory Layer is starting: review pages at http://{addr}/, "
                f"the admin at http://{addr}/admin/, the API at http://{addr}/api/docs/\n"
                f"Log in as {settings.DEMO_USERNAME} / {settings.DEMO_PASSWORD} (a reviewer);"
                f" the admin's jobs, schedules and keys as {settings.DEMO_ADMIN_USERNAME} /"
                f" {settings.DEMO_ADMIN_PASSWORD}\n"
                "(with DEBUG=false and no passwords of your own, seed_demo printed random ones)\n"
                "Ctrl-C stops everything. Rebuild the demo data with:"
                " .venv/bin/python manage.py seed_demo --reset\n"
                f"Broker: {settings.CELERY_BROKER_URL}  "
                f"Database: {settings.DATABASES['default']['HOST'] or 'embedded'}\n"
            )
        )
        manager.loop()
        if manager.returncode in ASKED_TO_STOP:
            self.stdout.write("Memory Layer stopped.")
            sys.exit(0)
        sys.exit(manager.returncode)

    def collect_static_files(self) -> None:
        """With DEBUG off, static files are served (by WhiteNoise) from STATIC_ROOT only: fill
        it first. With DEBUG on, they are served from where they live."""
        if settings.DEBUG:
            return
        self.stdout.write(f"Collecting static files into {settings.STATIC_ROOT}")
        call_command("collectstatic", interactive=False, verbosity=0)
