r"""Faults: the database restarted under load, a Celery worker killed mid-batch, the broker down.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
        .venv/bin/python -m bench.faults [a b c]

(a) A private PostgreSQL (initdb under a temporary folder, its own port) serves gunicorn
    while writers create memories, each with its own Idempotency-Key. It is stopped for a
    few seconds and started again. While it is down every answer must be a 503 in the error
    shape with Retry-After (never a 500, never a hang); after, writes succeed again; and
    every memory acknowledged with a 201 is in the database with its content.
(b) A Celery worker (prefork, one process, Redis broker, late acks) runs decay over 40,000
    memories; its pool process is killed with SIGKILL in the middle. The task must come back
    and finish, and the end state (each memory's confidence, active flag, and its one decay
    row in history) must equal that of a copy of the database on which decay ran once.
(c) A private Redis is the broker and the cache of a gunicorn; it is killed. Reads and
    writes (create, list, context, outcome) must still answer 2xx in under 2 s each;
    /readyz must say the broker is down (503) while /healthz says alive.

One module per fault (database, worker, broker) over a shared harness (harness: the
databases, gunicorn, calls on loopback and the checks). Loopback only; every process it
starts is stopped; each part is bounded in time. Exits non-zero when a check fails.
"""
