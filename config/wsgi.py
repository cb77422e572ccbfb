import os

from django.core.wsgi import get_wsgi_application

from ops import telemetry

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Before the application loads its middleware: traces, when an OTLP endpoint is named.
telemetry.configure()
application = get_wsgi_application()
