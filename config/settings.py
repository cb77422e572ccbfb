"""Settings for the Memory Layer service, read from the environment.

Every knob has a safe default for local use; `.env.example` lists them all.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.databases import Connections
from config.env import env_bool, env_int, env_list, env_path, env_str, load_env_file
from config.logging_settings import logging_settings

BASE_DIR = Path(__file__).resolve().parent.parent
load_env_file(BASE_DIR / ".env")
VAR_DIR = env_path("VAR_DIR", BASE_DIR / "var")

DEBUG = env_bool("DEBUG", default=True)
_DEVELOPMENT_KEY = "insecure-local-development-key-change-me"
SECRET_KEY = env_str("SECRET_KEY", _DEVELOPMENT_KEY if DEBUG else "")
if not DEBUG and (len(SECRET_KEY) < 50 or SECRET_KEY == _DEVELOPMENT_KEY):
    raise ImproperlyConfigured(
        "With DEBUG off, SECRET_KEY must be a random value of at least 50 characters, e.g. "
        "python -c 'import secrets; print(secrets.token_urlsafe(50))'"
    )
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "axes",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_filters",
    "django_celery_beat",
    "django_htmx",
    "template_partials",
    "memories",
    "knowledge",
    "people",
    "assembly",
    "policies",
    "ops",
    "api",
    "review",
    "mcp_http",
]

MIDDLEWARE = [
    "ops.requestid.RequestIdMiddleware",
    "ops.middleware.MetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Static files, straight after SecurityMiddleware as WhiteNoise asks (STATIC_ROOT below).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "ops.middleware.SecurityHeadersMiddleware",
    "ops.middleware.BodyLengthMiddleware",
    "api.middleware.ReleaseSlotMiddleware",
    # Only with read replicas (DATABASE_REPLICA_URLS): where each request reads.
    *(
        ["memories.replicas.ReplicaReadsMiddleware"]
        if env_list("DATABASE_REPLICA_URLS", [])
        else []
    ),
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it answers a locked-out sign-in.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "review.context_processors.review_urls",
            ],
        },
    },
]

# Database: DATABASE_URL when given, otherwise an embedded PostgreSQL under VAR_DIR.
DATABASE_URL = env_str("DATABASE_URL")
_database: dict[str, Any]
if DATABASE_URL:
    _database = dict(dj_database_url.parse(DATABASE_URL))
else:
    from config.embedded_db import embedded_database

    _database = embedded_database(VAR_DIR / "pgdata")
# Pooled connections (psycopg's pool, which Django drives): each process keeps between
# DATABASE_POOL_MIN_SIZE and DATABASE_POOL_MAX_SIZE connections per database and lends one
# to each request; a request waits up to DATABASE_POOL_TIMEOUT seconds for one. Without it
# each thread keeps its own connection for DB_CONN_MAX_AGE seconds. docs/scaling.md says how
# to size it: processes x threads x max size stays under the server's max_connections.
DATABASE_POOL = env_bool("DATABASE_POOL", False)
DATABASE_POOL_MIN_SIZE = env_int("DATABASE_POOL_MIN_SIZE", 2)
DATABASE_POOL_MAX_SIZE = env_int("DATABASE_POOL_MAX_SIZE", 4)
DATABASE_POOL_TIMEOUT = env_int("DATABASE_POOL_TIMEOUT", 10)
# Every statement of this process is cancelled after this long (0: never). The web server
# sets it well inside its workers' timeout (config/gunicorn.conf.py), so that no request can
# hold a worker, or a database connection, past it; the jobs keep PostgreSQL's own setting.
DATABASE_STATEMENT_TIMEOUT_MS = env_int("DATABASE_STATEMENT_TIMEOUT_MS", 0)
# No JIT compilation (PostgreSQL's jit, on by default): a page's statements are estimated
# as costly over a million rows even when an index and a LIMIT make them read a few
# hundred, and compiling them took half a second where running them took 20 ms.
# DATABASE_JIT=true gives PostgreSQL its own setting back.
DATABASE_JIT = env_bool("DATABASE_JIT", False)


_connections = Connections(
    pool={
        "min_size": DATABASE_POOL_MIN_SIZE,
        "max_size": DATABASE_POOL_MAX_SIZE,
        "timeout": DATABASE_POOL_TIMEOUT,
    }
    if DATABASE_POOL
    else None,
    conn_max_age=env_int("DB_CONN_MAX_AGE", 60),
    statement_timeout_ms=DATABASE_STATEMENT_TIMEOUT_MS,
    jit=DATABASE_JIT,
)
DATABASES = {"default": _connections.of(_database)}
DATABASES["default"]["TEST"] = {"NAME": env_str("TEST_DATABASE_NAME", "") or None}

# Read replicas (memories.replicas): streaming standbys of the primary, comma-separated
# URLs. Reading requests read on one that has replayed what their caller and project wrote;
# everything else uses the primary. None: every statement uses the primary.
DATABASE_REPLICA_URLS = env_list("DATABASE_REPLICA_URLS", [])
# A replica that cannot be reached within this many seconds (2 at least: libpq's minimum) is
# skipped for DATABASE_REPLICA_RETRY_SECONDS; one more than DATABASE_REPLICA_MAX_LAG_SECONDS
# behind is skipped until it catches up. What a request wrote is waited for this long.
DATABASE_REPLICA_CONNECT_TIMEOUT = env_int("DATABASE_REPLICA_CONNECT_TIMEOUT", 2)
DATABASE_REPLICA_RETRY_SECONDS = env_int("DATABASE_REPLICA_RETRY_SECONDS", 30)
DATABASE_REPLICA_MAX_LAG_SECONDS = env_int("DATABASE_REPLICA_MAX_LAG_SECONDS", 30)
DATABASE_REPLICA_STICKY_SECONDS = env_int("DATABASE_REPLICA_STICKY_SECONDS", 600)
for _number, _url in enumerate(DATABASE_REPLICA_URLS, start=1):
    DATABASES[f"replica_{_number}"] = _connections.replica(_url, DATABASE_REPLICA_CONNECT_TIMEOUT)
DATABASE_ROUTERS = ["memories.replicas.ReplicaRouter"] if DATABASE_REPLICA_URLS else []
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

# Static files. With DEBUG off they are served by WhiteNoise from STATIC_ROOT, filled by
# `manage.py collectstatic` (config/start-web runs it): names carry a hash of the content
# (the manifest), so WhiteNoise sends them with a ten-year, immutable Cache-Control, and a
# gzip copy of each is made once, there. With DEBUG on (development, the tests) they are
# found where they live, each request, and no collectstatic is needed.
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env_path("STATIC_ROOT", VAR_DIR / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = WHITENOISE_AUTOREFRESH = DEBUG

# HTTPS: with DEBUG off, every setting `manage.py check --deploy` asks for is on (a proxy
# that terminates TLS says so with X-Forwarded-Proto when TRUST_X_FORWARDED_PROTO is on).
# Health, readiness and metrics answer over plain HTTP for probes and scrapers inside the
# network.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=not DEBUG)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
if env_bool("TRUST_X_FORWARDED_PROTO", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 365 * 24 * 60 * 60)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=not DEBUG)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"

# /metrics: staff users, or a scraper sending "Authorization: Bearer <METRICS_TOKEN>".
METRICS_TOKEN = env_str("METRICS_TOKEN")

LOGIN_URL = "login"
# Sign-in throttling for the review pages and the admin (django-axes): after
# AXES_FAILURE_LIMIT failed sign-ins for one username from one address, that pair is
# refused (429) for AXES_COOLOFF_MINUTES, even with the right password; a success resets it.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("AXES_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "locked_out.html"
LOGIN_REDIRECT_URL = "review:dashboard"
LOGOUT_REDIRECT_URL = "login"

# Celery: CELERY_BROKER_URL when given (Redis, RabbitMQ); otherwise a broker on
# the local file system that needs no server, shared by web, worker and beat.
# (The host is named so that kombu does not warn, at each start, that it "reverts" to it.)
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://localhost/")
_broker_folder = VAR_DIR / "broker"
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {
        "data_folder_in": str(_broker_folder / "queue"),
        "data_folder_out": str(_broker_folder / "queue"),
        "processed_folder": str(_broker_folder / "processed"),
        # Its exchange table (kombu's default is a "control" folder in the working directory).
        "control_folder": str(_broker_folder / "control"),
        "store_processed": False,
    }
else:
    # Redis redelivers a message not acknowledged within this time. Policy batches are
    # short and every task has a hard time limit far below it, so only a lost worker's
    # task comes back, and running it again is harmless (the jobs are idempotent).
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = TIME_ZONE
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# Tasks are acknowledged after they ran (they are idempotent), and a task whose worker
# died is given back to the broker instead of being acknowledged with it; each worker
# takes one message at a time, so a lost worker loses no queued ones.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Workers log through LOGGING below (request-id filter, JSON when asked), not Celery's own.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Expiry and decay run as this many parts at once (one per worker process).
POLICY_JOB_PARTS = env_int("POLICY_JOB_PARTS", 2)
# The beat schedule, declared here; migrate and beat's start copy it into the admin
# (Periodic tasks), where a job can be paused.
_HOUR = 60 * 60
CELERY_BEAT_SCHEDULE = {
    name.replace("_", "-"): {
        "task": f"policies.{name}",
        "schedule": every,
        # A message still queued when the next one is due is dropped: no pile-up (the
        # database scheduler's name for the "expires" option).
        "options": {"expire_seconds": int(every * 0.9)},
    }
    for name, every in [
        ("expire_memories", 15 * 60),
        ("clear_run_scratch", _HOUR),
        ("update_tiers", _HOUR),
        ("evict_memories", _HOUR),
        ("decay_memories", 6 * _HOUR),
        ("consolidate_memories", 6 * _HOUR),
        ("find_conflicts", 6 * _HOUR),
        ("compress_memories", 24 * _HOUR),
        ("prune_conversations", 24 * _HOUR),
    ]
}

# REST API
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.auth.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.LimitedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_THROTTLE_CLASSES": [
        "api.throttling.ConcurrencyThrottle",
        "api.throttling.PerKeyRateThrottle",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "api.errors.api_exception_handler",
    "NON_FIELD_ERRORS_KEY": "nonFieldErrors",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "STRICT_JSON": True,
}
# Requests per API key (or signed-in user): "<number>/<second|minute|hour|day>".
API_THROTTLE_RATE = env_str("API_THROTTLE_RATE", "1200/min")
# Requests of one key (or user) answered at once; more wait for a 429 (0: no limit). Keep
# it below the web workers' number, so that one key never holds them all.
API_KEY_CONCURRENCY = env_int("API_KEY_CONCURRENCY", 2)
# Each of those holds a slot (api.slots) that frees itself this long after it was taken if
# it is never given back (a killed worker): at least the web workers' timeout.
API_SLOT_SECONDS = env_int("API_SLOT_SECONDS", 30)
# The slots live in this Redis (by default CACHE_URL's), or else in PostgreSQL.
API_SLOTS_URL = env_str("API_SLOTS_URL", env_str("CACHE_URL"))
API_MAX_BODY_BYTES = env_int("API_MAX_BODY_BYTES", 64 * 1024)
# The OpenAPI schema and its docs page describe the API, never any data: public by default,
# so an agent's developer can read them; API_DOCS_PUBLIC=false asks for a key or a sign-in.
API_DOCS_PUBLIC = env_bool("API_DOCS_PUBLIC", default=True)
SPECTACULAR_SETTINGS = {
    "SERVE_PERMISSIONS": [
        "rest_framework.permissions.AllowAny"
        if API_DOCS_PUBLIC
        else "rest_framework.permissions.IsAuthenticated"
    ],
    "TITLE": "Memory Layer API",
    "DESCRIPTION": "Long-term memory with governance for AI agents.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI's assets come from this project's static files, not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.schema.forbid_unknown_request_fields",
    ],
    "ENUM_NAME_OVERRIDES": {
        "MemoryTypeEnum": "memories.models.MemoryType",
        "SourceEnum": "memories.models.Source",
        "ReviewStatusEnum": "memories.models.ReviewStatus",
        "TierEnum": "memories.models.Tier",
        "RunStatusEnum": "memories.models.RunStatus",
        "OutcomeEnum": "memories.models.Outcome",
        "EventActionEnum": "memories.models.EventAction",
        "ContextSourceEnum": "assembly.sources.SOURCES",
        "ScopeEnum": "memories.models.Scope",
        "WritableScopeEnum": [("project", "project"), ("run", "run")],
        "PreferenceScopeEnum": [("project", "project"), ("global", "global")],
        "PairKindEnum": "knowledge.models.PairKind",
        "PairStatusEnum": "knowledge.models.PairStatus",
        "EntityKindEnum": "knowledge.models.EntityKind",
        "LinkTypeEnum": "knowledge.models.LinkType",
    },
}

# Caches: the assembly cache must be shared by all web processes (its invalidation is a
# write every process must see): Redis when CACHE_URL is set, else files under VAR_DIR.
CACHE_URL = env_str("CACHE_URL")
_shared_cache = (
    {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": CACHE_URL,
        # A Redis that is down or stuck costs a request half a second, then the cache is
        # skipped (assembly.cache): never a hung worker.
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
    }
    if CACHE_URL
    else {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(VAR_DIR / "cache"),
    }
)
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "assembly": {**_shared_cache, "KEY_PREFIX": "assembly", "TIMEOUT": 300},
    # The API's rate-limit counters (api.throttling), seen by every process.
    "throttle": {
        **_shared_cache,
        **({} if CACHE_URL else {"LOCATION": str(VAR_DIR / "throttle")}),
        "KEY_PREFIX": "throttle",
    },
    # Where each project's and caller's last write is, in the primary's WAL
    # (memories.replicas): seen by every process, as the assembly cache.
    "replicas": {**_shared_cache, "KEY_PREFIX": "replicas"},
}
ASSEMBLY_CACHE_SECONDS = env_int("ASSEMBLY_CACHE_SECONDS", 60)
# Uses of memories (access counts) are noted in this Redis and written in batches
# (memories.services.uses); unset (and no CACHE_URL): each use is written at once.
MEMORY_USES_URL = env_str("MEMORY_USES_URL", CACHE_URL or "")
MEMORY_USES_FLUSH_SECONDS = env_int("MEMORY_USES_FLUSH_SECONDS", 10)
# Each project's ranking weights, fitted to what its agents said they used (assembly.ranking).
CELERY_BEAT_SCHEDULE["fit-ranking"] = {
    "task": "ops.fit_ranking",
    "schedule": 6 * _HOUR,
    "options": {"expire_seconds": int(6 * _HOUR * 0.9)},
}
CELERY_BEAT_SCHEDULE["flush-memory-uses"] = {
    "task": "policies.flush_memory_uses",
    "schedule": MEMORY_USES_FLUSH_SECONDS,
    "options": {"expire_seconds": max(1, int(MEMORY_USES_FLUSH_SECONDS * 0.9))},
}
ASSEMBLY_TIME_BUDGET_MS = env_int("ASSEMBLY_TIME_BUDGET_MS", 500)

# Bulk edits over a whole filter (memories.services.bulk): the most memories one job
# covers (a filter matching more is refused: narrow it), and how many each of its
# transactions changes.
BULK_EDIT_MAX_MEMORIES = env_int("BULK_EDIT_MAX_MEMORIES", 100_000)
BULK_EDIT_BATCH_SIZE = env_int("BULK_EDIT_BATCH_SIZE", 1000)

# Memory store limits and defaults.
MEMORY_CONTENT_MAX_CHARS = env_int("MEMORY_CONTENT_MAX_CHARS", 4000)
MEMORY_SUMMARY_MAX_CHARS = 280
MEMORY_MAX_TAGS = env_int("MEMORY_MAX_TAGS", 20)
MEMORY_TAG_MAX_CHARS = 200
# Lists count their rows up to this many and give the planner's estimate above it ("about
# 98,000"; the dashboard says "1,000+"): an exact count of a filter over a million memories
# would read every one on every page.
LIST_COUNT_BOUND = env_int("LIST_COUNT_BOUND", 1_000)
MEMORY_TOKEN_ENCODING = env_str("MEMORY_TOKEN_ENCODING", "o200k_base")
# Compression of long, rarely used memories (policies.compressors): "extractive" (default,
# deterministic, local) or "llm" (an OpenAI-compatible chat completions endpoint).
MEMORY_COMPRESSOR = env_str("MEMORY_COMPRESSOR", "extractive")
MEMORY_COMPRESSOR_URL = env_str("MEMORY_COMPRESSOR_URL", "")
MEMORY_COMPRESSOR_MODEL = env_str("MEMORY_COMPRESSOR_MODEL", "")
MEMORY_COMPRESSOR_API_KEY = env_str("MEMORY_COMPRESSOR_API_KEY", "")
MEMORY_COMPRESSOR_TIMEOUT = env_int("MEMORY_COMPRESSOR_TIMEOUT", 30)
if MEMORY_COMPRESSOR not in {"extractive", "llm"}:
    raise ImproperlyConfigured('MEMORY_COMPRESSOR must be "extractive" or "llm".')
if MEMORY_COMPRESSOR == "llm" and not (MEMORY_COMPRESSOR_URL and MEMORY_COMPRESSOR_MODEL):
    raise ImproperlyConfigured(
        "MEMORY_COMPRESSOR=llm needs MEMORY_COMPRESSOR_URL and MEMORY_COMPRESSOR_MODEL."
    )
# Embeddings of memories for semantic ranking (knowledge.embeddings): "local" (default: the
# wordllama model shipped in its package, no network), "openai" (an OpenAI-compatible
# /v1/embeddings endpoint: Ollama, vLLM, text-embeddings-inference, OpenAI) or "off".
MEMORY_EMBEDDINGS = env_str("MEMORY_EMBEDDINGS", "local")
MEMORY_EMBEDDINGS_URL = env_str("MEMORY_EMBEDDINGS_URL", "")
MEMORY_EMBEDDINGS_MODEL = env_str("MEMORY_EMBEDDINGS_MODEL", "")
MEMORY_EMBEDDINGS_API_KEY = env_str("MEMORY_EMBEDDINGS_API_KEY", "")
MEMORY_EMBEDDINGS_TIMEOUT = env_int("MEMORY_EMBEDDINGS_TIMEOUT", 10)
if MEMORY_EMBEDDINGS not in {"local", "openai", "off"}:
    raise ImproperlyConfigured('MEMORY_EMBEDDINGS must be "local", "openai" or "off".')
if MEMORY_EMBEDDINGS == "openai" and not (MEMORY_EMBEDDINGS_URL and MEMORY_EMBEDDINGS_MODEL):
    raise ImproperlyConfigured(
        "MEMORY_EMBEDDINGS=openai needs MEMORY_EMBEDDINGS_URL and MEMORY_EMBEDDINGS_MODEL."
    )
# A judge model for the pairs of memories the rules cannot decide (knowledge.judge): an
# OpenAI-compatible chat completions endpoint (Ollama, vLLM, llama.cpp's server), given as its
# base URL (http://127.0.0.1:11434), its /v1 or its full /v1/chat/completions. Unset: the
# rules alone. Each job run asks it at most CONFLICT_JUDGE_CALLS questions.
CONFLICT_JUDGE_URL = env_str("CONFLICT_JUDGE_URL", "").strip()
CONFLICT_JUDGE_MODEL = env_str("CONFLICT_JUDGE_MODEL", "").strip()
CONFLICT_JUDGE_API_KEY = env_str("CONFLICT_JUDGE_API_KEY", "")
CONFLICT_JUDGE_TIMEOUT = env_int("CONFLICT_JUDGE_TIMEOUT", 20)
CONFLICT_JUDGE_CALLS = env_int("CONFLICT_JUDGE_CALLS", 50)
if CONFLICT_JUDGE_URL and not CONFLICT_JUDGE_MODEL:
    raise ImproperlyConfigured(
        "CONFLICT_JUDGE_URL is set but CONFLICT_JUDGE_MODEL is not: set CONFLICT_JUDGE_MODEL "
        "to the model the endpoint serves (e.g. qwen2.5:7b-instruct), or unset "
        "CONFLICT_JUDGE_URL to decide pairs by the rules alone."
    )
TIKTOKEN_CACHE_DIR = env_path("TIKTOKEN_CACHE_DIR", VAR_DIR / "tiktoken")

# Demo data.
DEMO_USERNAME = env_str("DEMO_USERNAME", "reviewer")
DEMO_PASSWORD = env_str("DEMO_PASSWORD", "review-the-memories")
# An administrator of the demo (the admin's policy jobs, schedules, API keys and members).
DEMO_ADMIN_USERNAME = env_str("DEMO_ADMIN_USERNAME", "admin")
DEMO_ADMIN_PASSWORD = env_str("DEMO_ADMIN_PASSWORD", "administer-the-memories")

# Logs: one line per record with the request id; LOG_FORMAT=json writes one JSON object per
# line instead (ops.logs). Nothing logs request bodies, keys or memory content.
LOG_FORMAT = env_str("LOG_FORMAT", "text")
if LOG_FORMAT not in {"text", "json"}:
    raise ImproperlyConfigured('LOG_FORMAT must be "text" or "json".')
LOGGING = logging_settings(LOG_FORMAT, env_str("LOG_LEVEL", "INFO"))
