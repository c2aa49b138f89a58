"""The one settings module, driven by the environment (README: Configuration).

Every secret can also come from a file named by ``<NAME>_FILE`` (Kubernetes and Docker secrets mount
files, not variables). Defaults are the embedded demo: SQLite, no Redis, in-process Celery.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from datetime import timedelta
from pathlib import Path

import dj_database_url
import django_stubs_ext
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from gpuplatform.outbound.policy import parse_networks

# Lets generic Django classes be subscripted at runtime (ModelAdmin[User]), as the type checker wants.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent


def env(name: str, default: str = "") -> str:
    """The variable ``name``, or the content of the file named by ``name_FILE``, or ``default``."""
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        try:
            return Path(file_path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_path} cannot be read: {exc}") from exc
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = env(name, "1" if default else "0").strip().lower()
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off", ""}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = env(name, str(default))
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from exc


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in env(name, default).split(",") if item.strip()]


DEBUG = env_bool("DJANGO_DEBUG", False)
# Production hardening switch; `manage.py check --deploy` is clean with it on (README).
SECURE = env_bool("GPUPLATFORM_SECURE", False)


def local_secret_key(path: Path) -> str:
    """The key in ``path``, made there at first use: random, readable by its owner only (0600).

    For the demo and the tests, which set no SECRET_KEY: the kubeconfig key and the bundle signing key
    derive from it outside secure mode, so a default published in the repository would decrypt every
    stored kubeconfig and sign bundles for every agent. Processes that start together (test workers,
    the demo's server and its worker) agree: the file is linked into place, never overwritten."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, draft = tempfile.mkstemp(dir=path.parent, prefix=".secret_key.")  # mkstemp: mode 0600
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_urlsafe(50) + "\n")
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another process made it first: theirs is the key
        finally:
            os.unlink(draft)
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)  # a copy or an old checkout's file left readable by others
    key = path.read_text().strip()
    if not key:
        raise ImproperlyConfigured(f"{path} is empty: delete it to have a new key made")
    return key


# A secure deployment refuses to start without a key; elsewhere one is made for this checkout.
SECRET_KEY = env("SECRET_KEY")
if not SECRET_KEY and SECURE:
    raise ImproperlyConfigured("SECRET_KEY (or SECRET_KEY_FILE) must be set when GPUPLATFORM_SECURE=1")
if not SECRET_KEY:
    _key_file = Path(env("DEV_SECRET_KEY_FILE", str(BASE_DIR / "var" / "secret_key")))
    try:
        SECRET_KEY = local_secret_key(_key_file)
    except OSError as exc:  # a read-only image, say: say what to do rather than a traceback
        raise ImproperlyConfigured(
            f"No SECRET_KEY, and {_key_file} cannot hold one ({exc}): set SECRET_KEY (or SECRET_KEY_FILE)"
            " or DEV_SECRET_KEY_FILE to a writable path"
        ) from exc

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
# Proxies (CIDRs) whose X-Forwarded-For is believed; empty: nobody's, the connecting address is the
# client. One reading (gpuplatform/api/addresses.py) for throttles, the login lockout and the audit log.
TRUSTED_PROXIES = env_list("TRUSTED_PROXIES")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "axes",
    "csp",
    "gpuplatform",
    "gpuplatform.accounts",
    "gpuplatform.audit",
    "gpuplatform.ui",
    "gpuplatform.health",
    "tenants",
    "inventory",
    "quotas",
    "metering",
    "policies",
    "demo",
]

MIDDLEWARE = [
    "gpuplatform.api.no_store.ApiNoStoreMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "gpuplatform.observability.request_id.RequestIdMiddleware",
    "gpuplatform.observability.metrics_http.RequestMetricsMiddleware",
    "gpuplatform.api.address_guard.AddressGuardMiddleware",
    "tenants.middleware.MembershipsReadOnceMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "csp.middleware.CSPMiddleware",
    "gpuplatform.accounts.login_rate.LoginRateMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its 429 answer.
    "axes.middleware.AxesMiddleware",
]

# Single sign-on (OpenID Connect, docs/operations.md): the provider's endpoints come from its
# discovery document unless set; group claims map to platform roles and tenant memberships at each
# login. LOCAL_LOGIN_ENABLED=0 turns password logins off (the login page offers single sign-on only).
OIDC_ENABLED = env_bool("OIDC_ENABLED", False)
LOCAL_LOGIN_ENABLED = env_bool("LOCAL_LOGIN_ENABLED", True)
OIDC_ISSUER = env("OIDC_ISSUER").rstrip("/")
OIDC_PROVIDER_NAME = env("OIDC_PROVIDER_NAME", "single sign-on")
OIDC_RP_CLIENT_ID = env("OIDC_RP_CLIENT_ID")
OIDC_RP_CLIENT_SECRET = env("OIDC_CLIENT_SECRET")
OIDC_RP_SCOPES = env("OIDC_RP_SCOPES", "openid email profile groups")
OIDC_RP_SIGN_ALGO = env("OIDC_RP_SIGN_ALGO", "RS256")
OIDC_OP_AUTHORIZATION_ENDPOINT = env("OIDC_OP_AUTHORIZATION_ENDPOINT")
OIDC_OP_TOKEN_ENDPOINT = env("OIDC_OP_TOKEN_ENDPOINT")
OIDC_OP_USER_ENDPOINT = env("OIDC_OP_USER_ENDPOINT")
OIDC_OP_JWKS_ENDPOINT = env("OIDC_OP_JWKS_ENDPOINT")
OIDC_GROUPS_CLAIM = env("OIDC_GROUPS_CLAIM", "groups")
try:
    OIDC_GROUP_ROLES = json.loads(env("OIDC_GROUP_ROLES", "{}"))
except json.JSONDecodeError as exc:
    raise ImproperlyConfigured(f"OIDC_GROUP_ROLES must be a JSON object: {exc}") from exc
OIDC_USE_PKCE = True
OIDC_USE_NONCE = True
OIDC_TIMEOUT = env_int("OIDC_TIMEOUT_SECONDS", 10)
OIDC_VERIFY_SSL = env_bool("OIDC_VERIFY_SSL", True)
OIDC_AUTHENTICATE_CLASS = "tenants.sso.views.Authenticate"
OIDC_CALLBACK_CLASS = "tenants.sso.views.Callback"
LOGIN_REDIRECT_URL_FAILURE = "/login/?sso=failed"

AUTHENTICATION_BACKENDS = [
    # django-axes first: it refuses a locked-out username or address before a password is checked.
    "axes.backends.AxesStandaloneBackend",
    *(["django.contrib.auth.backends.ModelBackend"] if LOCAL_LOGIN_ENABLED else []),
    *(["tenants.sso.backend.GroupMappingBackend"] if OIDC_ENABLED else []),
]
# Logins: locked after LOGIN_FAILURE_LIMIT failures of one username from one address, for
# LOGIN_COOLOFF_MINUTES; a success resets the count. Never per username alone (anyone could lock
# anyone out) nor per address alone (everyone behind one NAT would share the lock): an address that
# fails more than LOGIN_ADDRESS_FAILURE_RATE, whatever the usernames, is only slowed for the rest of
# that window (gpuplatform/accounts/login_rate.py).
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_CLIENT_IP_CALLABLE = "gpuplatform.api.addresses.client_address"
LOGIN_ADDRESS_FAILURE_RATE = env("LOGIN_ADDRESS_FAILURE_RATE", "20/minute")
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False

# Content-Security-Policy on every page: scripts and styles from our own origin only (vendored, no
# CDN), no inline scripts. Inline style attributes stay allowed: bars and swatches are sized by them,
# and Swagger UI and ReDoc set them too.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "worker-src": ["'self'", "blob:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'", "data:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

ROOT_URLCONF = "gpuplatform.urls"
WSGI_APPLICATION = "gpuplatform.wsgi.application"
# Bare ASGI apps that gpuplatform/asgi.py answers ahead of Django, by exact path, as dotted paths so
# the core imports no domain app: the agents' long poll skips the middleware chain under uvicorn
# (policies/api/long_poll.py). The same path is a Django route too, for WSGI and the test client.
ASGI_BARE_APPS = {"/api/v1/agents/bundle/": "policies.api.long_poll.bundle_asgi"}
AUTH_USER_MODEL = "accounts.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "overview"
LOGOUT_REDIRECT_URL = "login"

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
                "gpuplatform.ui.context.navigation",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env("DATABASE_URL", f"sqlite:///{BASE_DIR / 'var' / 'demo.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    # The demo's SQLite file serves its own concurrency (API threads, the sync, the admission loop).
    # WAL: readers never block the writer. IMMEDIATE: a transaction takes the write lock when it
    # begins, so it waits (up to `timeout` seconds) behind the current writer; a deferred one that
    # read first and then wrote could not wait and failed at once with "database is locked".
    # synchronous=NORMAL is durable across process crashes, which is what a demo needs.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env("REDIS_URL")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": env("CACHE_KEY_PREFIX", "gpuplatform"),
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Celery: Redis in production and tests; in the demo, the in-memory transport in this process.
CELERY_BROKER_URL = env("CELERY_BROKER_URL", REDIS_URL or "memory://")
CELERY_RESULT_BACKEND = env("CELERY_RESULT_BACKEND", "") or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", not REDIS_URL)
ADMISSION_LOOP_SECONDS = float(env_int("ADMISSION_LOOP_SECONDS", 30))
# Where tasks run eagerly, these run in a thread of their own instead of inside the caller
# (gpuplatform/celery.py); the demo names its report build.
EAGER_TASKS_IN_THREADS: tuple[str, ...] = ()
# A report build reads the month's usage in slices of this many hours, each its own short query,
# with the job's progress recorded between them; 0 reads it in one scan (PostgreSQL hashes a month
# in one pass, docs/benchmarks.md). The demo reads SQLite a day at a time (demo/server.py).
REPORT_BUILD_SLICE_HOURS = env_int("REPORT_BUILD_SLICE_HOURS", 0)
# The overview's "what needs attention" names requests pending longer than this (quotas/attention.py);
# the queue-wait SLO's default target (docs/slos.md), which quotas cannot read from metering.
QUEUE_WAIT_ATTENTION_SECONDS = env_int("QUEUE_WAIT_ATTENTION_SECONDS", 600)
CELERY_TASK_DEFAULT_QUEUE = env("CELERY_TASK_DEFAULT_QUEUE", "celery")
# With Redis, a message a worker took and never acknowledged (the worker died mid-task: tasks ack late)
# goes back on the queue this many seconds after delivery. Longer than the longest task; the worker
# tests set a few seconds so a killed worker's task comes back while they wait.
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 3600)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
# Metering's usage source: a cluster's MetricsSource row wins; else this Prometheus (same query API as
# Thanos or Mimir) with the default metric names; else, where allowed (the demo), the simulated source.
PROMETHEUS_URL = env("PROMETHEUS_URL", "")
METERING_SIMULATED_USAGE = env_bool("METERING_SIMULATED_USAGE", False)
METERING_MINUTE = env_int("METERING_MINUTE", 5)
# Periods of the beat entries that loop; each loop's heartbeat is stale after three of them.
SLO_EVALUATION_SECONDS = env_int("SLO_EVALUATION_SECONDS", 60)
ROLLOUT_ADVANCE_SECONDS = 15.0
OFFLINE_AGENTS_SECONDS = 30.0
# gpuplatform's Kueue admission check (docs/kueue.md): the hours a Workload without
# maximumExecutionTimeSeconds is counted for, and how long Kueue waits before a Workload held over
# budget (Retry) is queued again.
KUEUE_CHECK_DEFAULT_HOURS = env_int("KUEUE_CHECK_DEFAULT_HOURS", 24)
KUEUE_CHECK_RETRY_SECONDS = env_int("KUEUE_CHECK_RETRY_SECONDS", 300)
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    # SLOs: settled buckets, burn-rate alerts and due webhook retries (docs/slos.md).
    "metering-evaluate-slos": {
        "task": "metering.evaluate_slos",
        "schedule": SLO_EVALUATION_SECONDS,
    },
    # Expire ended requests and decide pending ones again (capacity freed by pods, quota edits).
    "quotas-admission-loop": {
        "task": "quotas.run_admission_loop",
        "schedule": ADMISSION_LOOP_SECONDS,
    },
    # Kueue clusters: apply the compiled objects again, repairing hand edits (docs/kueue.md).
    "quotas-kueue-reconcile": {
        "task": "quotas.reconcile_kueue_clusters",
        "schedule": env_int("KUEUE_RECONCILE_SECONDS", 300),
    },
    # Kueue clusters: decide the Workloads waiting on gpuplatform's admission check (docs/kueue.md);
    # the sync also queues a pass as soon as it sees one waiting.
    "quotas-kueue-check": {
        "task": "quotas.check_kueue_clusters",
        "schedule": env_int("KUEUE_CHECK_SECONDS", 60),
    },
    # Rollouts: retries after backoff, blocked nodes that drained, MIG verification; silent agents.
    "policies-advance-rollouts": {
        "task": "policies.advance_running_rollouts",
        "schedule": ROLLOUT_ADVANCE_SECONDS,
    },
    "policies-offline-agents": {"task": "policies.mark_offline_nodes", "schedule": OFFLINE_AGENTS_SECONDS},
    # Metering: the hour that just ended, a few minutes after it (late scrapes land), for every
    # cluster (allocation basis, and usage where it has a source); then, half an hour later, every
    # usage hour still incomplete inside its source's retention.
    "metering-last-hour": {
        "task": "metering.meter_last_hour",
        "schedule": crontab(minute=METERING_MINUTE),
    },
    "metering-retry-incomplete-usage": {
        "task": "metering.retry_incomplete_usage",
        "schedule": crontab(minute=(METERING_MINUTE + 30) % 60),
    },
    # Hours whose allocations the sync learnt of late (started or ended in an hour already metered):
    # metered again, open periods rewritten, closed ones adjusted in the next open period.
    "metering-remeter-late-changes": {
        "task": "metering.remeter_late_changes",
        "schedule": crontab(minute=(METERING_MINUTE + 15) % 60),
    },
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
BILLING_TIMEZONE = env("BILLING_TIMEZONE", "UTC")

STATIC_URL = "static/"
STATIC_ROOT = Path(env("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on every start when it is missing
# Uploaded and generated files (a billing period's export files): under var/ by default, beside the
# demo's database; a deployment points it at a persistent volume.
MEDIA_ROOT = env("MEDIA_ROOT", str(BASE_DIR / "var" / "media"))
MEDIA_URL = "/media/"  # not served: files are downloaded through views that check who asks

STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if env_bool("STATIC_MANIFEST", False)
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
# The demo runs without collectstatic: WhiteNoise then serves straight from the app folders.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

API_PAGE_SIZE = env_int("API_PAGE_SIZE", 50)
API_MAX_PAGE_SIZE = env_int("API_MAX_PAGE_SIZE", 500)
API_TOKEN_LAST_USED_RESOLUTION_SECONDS = 60
API_TOKEN_DEFAULT_DAYS = env_int("API_TOKEN_DEFAULT_DAYS", 90)
API_MAX_JSON_DEPTH = env_int("API_MAX_JSON_DEPTH", 32)
# Per client address, API answers of 401 (bad or missing credentials) before every call from that
# address answers 429 for the rest of the window: token guessing is slowed before authentication.
API_ANON_THROTTLE_RATE = env("API_ANON_THROTTLE_RATE", "120/minute")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "gpuplatform.api.authentication.BearerTokenAuthentication",
        # Sessions (CSRF enforced on writes) for the UI and the API docs page.
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["gpuplatform.api.permissions.IsAuthenticatedWithScope"],
    "DEFAULT_PAGINATION_CLASS": "gpuplatform.api.pagination.PagePagination",
    # django-filter's, refusing unknown query parameters on lists (400 unknown_filter).
    "DEFAULT_FILTER_BACKENDS": ["gpuplatform.api.filters.StrictFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_CLASSES": [
        "gpuplatform.api.throttling.TokenRateThrottle",
        "gpuplatform.api.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "token": env("API_THROTTLE_RATE", "1200/minute"),
        # All of one user's tokens and sessions together: a second token is not a fresh allowance.
        "user": env("API_USER_THROTTLE_RATE", "3600/minute"),
    },
    "EXCEPTION_HANDLER": "gpuplatform.api.problems.problem_exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["gpuplatform.api.parsers.LimitedJSONParser"],
    "PAGE_SIZE": API_PAGE_SIZE,
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"] = [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ]

SPECTACULAR_SETTINGS = {
    "TITLE": "gpuplatform API",
    "DESCRIPTION": "Tenants, quotas, admission, inventory, policies and chargeback for shared GPU fleets.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    # Swagger UI and ReDoc from the sidecar package's static files: no CDN on air-gapped installs.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Both of a queue's fungibility fields share one choice set: one name for it in the schema.
    "ENUM_NAME_OVERRIDES": {
        "FlavorFungibilityEnum": "quotas.models.catalogue.Fungibility.choices",
        # queued/running/done/failed: report jobs and admission applies share the one choice set.
        "JobStateEnum": "metering.models.jobs.JobState.choices",
    },
}

SESSION_COOKIE_HTTPONLY = True
# UI sessions: a working day by default, in the database (docs/operations.md: Sessions and tokens).
SESSION_COOKIE_AGE = env_int("SESSION_COOKIE_AGE", 8 * 3600)
SESSION_COOKIE_SAMESITE = "Lax"  # the provider's redirect back to /oidc/callback/ is a top-level GET
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the cookie-less meta tag; kept default for forms
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if SECURE:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # /healthz and /readyz are probed over plain HTTP by the kubelet, /metrics scraped by Prometheus.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]

# /metrics (gpuplatform/observability/metrics.py): for this bearer token (the chart's ServiceMonitor
# sends it) and platform-admins' sessions only.
METRICS_TOKEN = env("METRICS_TOKEN")
# Logs: "json" (one object a line with the request id; the default in secure mode) or "plain".
LOG_FORMAT = env("LOG_FORMAT", "json" if SECURE else "plain")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "gpuplatform.observability.logs.RequestIdFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(request_id)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
            "timestamp": False,
        },
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if LOG_FORMAT == "json" else "plain",
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "INFO"}},
}

# Inventory (issue #4). Kubeconfigs are encrypted at rest with this Fernet key (urlsafe base64 of 32
# bytes); unset outside secure mode, a key is derived from SECRET_KEY (the checkout's own random one
# in var/secret_key when SECRET_KEY is unset) so the demo and tests just work.
GPUPLATFORM_ENCRYPTION_KEY = env("GPUPLATFORM_ENCRYPTION_KEY")
# Policies (issue #12): the Ed25519 private key (PEM) signing bundles for node agents. Required in secure
# mode; otherwise derived from SECRET_KEY (policies/signing.py).
# Node agents (docs/agents.md): a credential is rotated by its agent after this many seconds; a node
# without a heartbeat for AGENT_OFFLINE_AFTER seconds is offline; a failed node is retried with
# exponential backoff from POLICY_RETRY_BASE_SECONDS, at most POLICY_MAX_ATTEMPTS times.
AGENT_CREDENTIAL_ROTATE_SECONDS = env_int("AGENT_CREDENTIAL_ROTATE_SECONDS", 7 * 24 * 3600)
AGENT_OFFLINE_AFTER = env_int("AGENT_OFFLINE_AFTER", 120)
# The long poll, per server process (policies/api/long_poll.py): polls one agent credential may hold
# waiting at once (a real agent holds one; two cover a restart), and waiting polls in all. Past either,
# 429 with Retry-After; the agent backs off and asks again.
AGENT_POLL_MAX_PER_CREDENTIAL = env_int("AGENT_POLL_MAX_PER_CREDENTIAL", 2)
AGENT_POLL_MAX_WAITERS = env_int("AGENT_POLL_MAX_WAITERS", 10000)
POLICY_RETRY_BASE_SECONDS = env_int("POLICY_RETRY_BASE_SECONDS", 15)
POLICY_RETRY_CAP_SECONDS = env_int("POLICY_RETRY_CAP_SECONDS", 600)
POLICY_MAX_ATTEMPTS = env_int("POLICY_MAX_ATTEMPTS", 3)
# Redis pub/sub channels that fan a new desired revision out to every web process's waiting agents.
POLICY_PUSH_CHANNEL_PREFIX = env("POLICY_PUSH_CHANNEL_PREFIX", "gpuplatform:bundles:")
POLICY_SIGNING_KEY = env("POLICY_SIGNING_KEY")
if SECURE and not POLICY_SIGNING_KEY:
    raise ImproperlyConfigured(
        "POLICY_SIGNING_KEY (or POLICY_SIGNING_KEY_FILE) must be set when GPUPLATFORM_SECURE=1"
    )
# Seconds between full resyncs (re-list and reconcile, counting drift) while watching.
INVENTORY_RESYNC_SECONDS = env_int("INVENTORY_RESYNC_SECONDS", 600)
# Namespaces no tenant may own (shell patterns): their pods are the platform's, and a ResourceQuota
# applied there would throttle the cluster itself.
SYSTEM_NAMESPACES = env_list(
    "SYSTEM_NAMESPACES",
    "kube-*,default,gpu-operator,gpu-operator-resources,nvidia-gpu-operator,nvidia-dra-driver*,"
    "hami-system,kueue-system,cert-manager,gpuplatform*",
)
# A cluster's API server on a loopback address (and so over plain HTTP) is refused unless this is on:
# the demo's and the test suite's kubesim serve there; a production control plane never should.
CLUSTER_ALLOW_LOOPBACK = env_bool("CLUSTER_ALLOW_LOOPBACK", False)
# Loopback and private addresses (CIDR blocks) that alert receivers, metrics sources and single sign-on
# may reach, over plain http too; everything else must be public and https (docs/security.md,
# "Where the server connects"). Metadata and link-local addresses are refused whatever this says.
try:
    OUTBOUND_ALLOWED_NETWORKS = [str(n) for n in parse_networks(env_list("OUTBOUND_ALLOWED_NETWORKS"))]
except ValueError as exc:
    raise ImproperlyConfigured(f"OUTBOUND_ALLOWED_NETWORKS: {exc}") from exc
# Page size of the paginated lists from the Kubernetes API.
INVENTORY_LIST_PAGE_SIZE = env_int("INVENTORY_LIST_PAGE_SIZE", 500)
# Node labels that say where a node sits (zone, rack, ...), recorded per node next to its NVLink clique
# (nvidia.com/gpu.clique, always read) and shown on the nodes and pools pages. Kubernetes has no
# standard rack label: a platform that labels racks names its key here.
INVENTORY_TOPOLOGY_LABELS = env_list(
    "INVENTORY_TOPOLOGY_LABELS", "topology.kubernetes.io/region,topology.kubernetes.io/zone"
)
