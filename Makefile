# One command runs the service with demo data; one runs the tests.
#   make run    set up everything and run web + Celery worker + beat at http://127.0.0.1:8000/
#               (make run PORT=8080 for another port)
#   make test   run the whole test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
INSTALLED := $(VENV)/.installed-$(shell cat requirements.lock pyproject.toml clients/python/pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: install run cluster test test-client lint format lock clean

$(INSTALLED): requirements.lock pyproject.toml clients/python/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	# The Python client (its dependencies are in the lock): the service's MCP tools are its.
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e clients/python
	rm -f $(VENV)/.installed-*
	touch $@

install: $(INSTALLED)

run: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py seed_demo
	# Each lifecycle job once, so the dashboard shows a last run of each from the start.
	$(PY) manage.py run_job --all
	$(PY) manage.py serve --addr 127.0.0.1:$(PORT)

# A primary, a streaming replica, web servers on 8001 and 8002, a worker and beat (bench/cluster.py).
cluster: install
	$(PY) bench/cluster.py up $(CLUSTER_ARGS)

# The pgvector tests need the extension: against a server without it (DATABASE_URL set),
# they run again on the embedded PostgreSQL, which has it.
test: install
	$(PY) -m pytest $(PYTEST_ARGS)
	if [ -n "$$DATABASE_URL" ]; then \
		DATABASE_URL= REQUIRE_PGVECTOR=1 $(PY) -m pytest -m pgvector -q $(PYTEST_ARGS); fi

# The Python client's own tests, against a service they start (gunicorn, a fresh database).
test-client: install
	cd clients/python && ../../$(PY) -m pytest $(PYTEST_ARGS)

lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy
	$(VENV)/bin/lint-imports

format: install
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

# Re-pin every package after changing pyproject.toml.
lock: install
	$(PY) -m pip install --quiet uv
	$(PY) -m uv pip compile pyproject.toml --extra dev --generate-hashes --quiet -o requirements.lock

clean:
	rm -rf $(VENV) var
