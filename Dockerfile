# The service's image: web (the default command), Celery worker and beat (compose.yaml).
# It adds no step of its own to starting the service: the command is config/start-web
# (collectstatic, migrate, gunicorn with config/gunicorn.conf.py), the script CI's production
# test runs (tests/browser/test_production.py). Docker does not run in CI: see docs/operations.md.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH \
    BIND=0.0.0.0:8000

# The pinned packages, checked against their hashes, in a virtualenv of their own.
COPY requirements.lock /tmp/requirements.lock
RUN python -m venv /opt/venv \
    && pip install --no-cache-dir --require-hashes -r /tmp/requirements.lock \
    && rm /tmp/requirements.lock

# The service runs as this user, never as root: the code is root's and read-only to it; it
# writes only under /app/var (static files, metrics, caches, the tiktoken vocabularies).
RUN useradd --system --uid 10001 --user-group --home-dir /app --no-create-home memory
WORKDIR /app
COPY . .
# The Python client: the MCP tools and the token counting are its (dependencies in the lock).
RUN pip install --no-cache-dir --no-deps ./clients/python \
    && mkdir -p var && chown memory:memory var
USER memory

# The static files, hashed and compressed, collected once here (start-web finds them there
# and has nothing left to do). Settings with DEBUG off need a key, and a database URL so as
# not to start the embedded PostgreSQL: neither is used, nor kept in the image's settings.
RUN DEBUG=false DATABASE_URL=postgres://build@127.0.0.1:1/none \
    SECRET_KEY=build-time-only-key-never-used-to-sign-anything-0123456789 \
    python manage.py collectstatic --noinput --verbosity 0

EXPOSE 8000
CMD ["config/start-web"]
