import os

from django.core.asgi import get_asgi_application

from ops import telemetry

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Before the application loads its middleware: traces, when an OTLP endpoint is named.
telemetry.configure()
application = get_asgi_application()
