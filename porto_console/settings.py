"""Django settings. Embedded defaults for `make run`; real services through the environment."""

from __future__ import annotations

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from porto_console.environment import BASE_DIR, NotConfigured, read_environment

# Every variable is read here, once, typed (porto_console/environment.py); a bad one stops the console at start.
try:
    _environment = read_environment()
except NotConfigured as refused:
    raise ImproperlyConfigured(str(refused)) from None

DEBUG = _environment.debug
# Keys. Outside the labelled demo the console refuses to serve with the default SECRET_KEY, without a
# key of its own for sealed handles, or with a step-up key the ledger does not trust
# (porto_console/console/safety.py); the demo launcher fills in keys of the demo's own, kept in var/, and its fixture keys.
DEFAULT_SECRET_KEY = "porto-local-only-secret-key-change-me-in-deployment"
SECRET_KEY = _environment.secret_key.value() or DEFAULT_SECRET_KEY
HANDLE_KEY = _environment.handle_key.value()  # seals ledger IDs into URL handles (console/handles.py)
STEP_UP_KEY = _environment.step_up_key.value()  # Ed25519 private key, hex: signs step-up proofs (console/stepup.py)
# Keys accounts' identity digests (ledger_engine/domain/identity.py); it never enters the ledger or a backup, and
# it is kept for as long as any account made under it exists: without it no enrolment link could be checked.
IDENTITY_KEY = _environment.identity_key.value()
# Signs the checkpoint (batch root and size) every statement file carries: a 32-byte Ed25519 seed in hex. Its
# public half is pinned on /verify/ under CHECKPOINT_ORIGIN, the key name and checkpoint origin (docs/runbook.md).
CHECKPOINT_KEY = _environment.checkpoint_key.value()
CHECKPOINT_ORIGIN = _environment.checkpoint_origin
METRICS_TOKEN = _environment.metrics_token.value()  # the scraper's bearer token; without one /metrics is off
# The genesis this deployment trusts, kept apart from the data: outside the labelled demo the console refuses a
# ledger from any other genesis, and recovery refuses backups from one (ledger_engine/checkpoint/verify.py).
GENESIS_HASH = _environment.genesis_hash
ALLOWED_HOSTS = list(_environment.allowed_hosts)

INSTALLED_APPS = [
    "porto_console.console.apps.PortoAdminConfig",  # the stock admin app with the console's site
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_otp",
    "django_otp.plugins.otp_totp",
    "axes",
    "ninja",  # swagger-ui from the package's static files, never a CDN
    "porto_console.console",
    "porto_console.internal_api",
]

MIDDLEWARE = [
    "porto_console.operations.request_id.RequestIdMiddleware",  # first: every later log line carries the ID
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "porto_console.console.proof_version.ProofVersionMiddleware",  # a session older than its user's proof ends
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "axes.middleware.AxesMiddleware",
]

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

ROOT_URLCONF = "porto_console.urls"
WSGI_APPLICATION = "porto_console.wsgi.application"

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
                "porto_console.console.context.ledger_label",
                "porto_console.console.context.display_names",
            ],
        },
    },
]

VAR_DIR = _environment.var_dir
DATABASES = {"default": dj_database_url.parse(_environment.database_url, conn_max_age=60)}

# The ledger this process owns. Only one process may open it read-write.
LEDGER_DATA_DIR = _environment.data_dir
# The admission gateway's durable envelopes and evidence for that ledger.
ADMISSION_DIR = _environment.admission_dir

CELERY_BROKER_URL = _environment.broker_url
CELERY_RESULT_BACKEND = _environment.celery_result_backend

# Backups that count (docs/effects.md): staged beside the data directory, never inside it, encrypted by
# restic into PORTO_BACKUP_REPOSITORY: a local path by default (the embedded case), sftp:user@host:/path
# off the ledger host in deployment, reached with PORTO_BACKUP_SFTP_COMMAND (restic's sftp.command). A backup
# directory inside the data directory is refused at start.
BACKUP_DIR = _environment.backup_dir.resolve()
BACKUP_REPOSITORY = _environment.backup_repository
BACKUP_STAGING_DIR = _environment.backup_staging_dir
BACKUP_SFTP_COMMAND = _environment.backup_sftp_command
# Outside the labelled demo the console refuses to serve without a backup password.
BACKUP_PASSWORD = _environment.backup_password.value()
DEMO_BACKUP_PASSWORD = "porto-demo-backup-password-public"
BACKUP_INTERVAL_SECS = _environment.backup_interval_secs  # the ceiling is five minutes
BACKUP_TICK_SECS = _environment.backup_tick_secs
RESTIC_BINARY = _environment.restic_binary
# Effects the workers parked for an operator; the same directory as the workers' PORTO_QUARANTINE_DIR.
QUARANTINE_DIR = _environment.quarantine_dir
# The signers' PostgreSQL database (docs/effects.md), when they run on other hosts: the quarantine is there.
SIGNER_JOURNAL_URL = _environment.signer_journal_url.value()
# Announce new effects to the workers after commit. Off without a broker and a signer (`make run`):
# the embedded broker would run payment tasks inside the request. PORTO_EFFECTS_ENABLED=1/0 overrides.
EFFECTS_ENABLED = _environment.effects_enabled
# The console's process runs "Allocate days" requests on the ledger's owner it holds, and continues unfinished ones
# when it opens the ledger (ledger_engine/application/day_freeze.py). PORTO_DAY_ALLOCATION_IN_BACKGROUND=0 turns it off.
DAY_ALLOCATION_IN_BACKGROUND = _environment.day_allocation_in_background

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 12}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Sessions and cookies: no domain data in URLs, short idle sessions, strict cookies.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Strict"
CSRF_COOKIE_SAMESITE = "Strict"
CSRF_COOKIE_HTTPONLY = True
SESSION_COOKIE_AGE = 60 * 30  # idle timeout: every request renews it
SESSION_SAVE_EVERY_REQUEST = True
SESSION_EXPIRE_AT_BROWSER_CLOSE = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
LOGIN_URL = "admin:login"
# Behind a TLS proxy (docs/deployment.md), PORTO_TRUSTED_PROXY is its address. Waitress then takes the scheme
# and client address from that proxy's X-Forwarded-Proto/-For and strips both from anyone else, so Django may
# trust the scheme header; cookies become secure-only and browsers are told to use HTTPS (HSTS). The proxy is
# the only one (deploy/nginx/porto-console.conf writes both headers over the client's), and Django reads no
# X-Forwarded-Host or -Port.
USE_X_FORWARDED_HOST = False
USE_X_FORWARDED_PORT = False
TRUSTED_PROXY = _environment.trusted_proxy
if TRUSTED_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = _environment.hsts_seconds
    SECURE_HSTS_INCLUDE_SUBDOMAINS = _environment.hsts_include_subdomains
SECURE_COOKIES = _environment.secure_cookies
SESSION_COOKIE_SECURE = SECURE_COOKIES
CSRF_COOKIE_SECURE = SECURE_COOKIES

# Content-Security-Policy on every response: nothing but this origin's own files, no inline script.
CONTENT_SECURITY_POLICY = {"DIRECTIVES": {
    "default-src": [SELF], "script-src": [SELF], "style-src": [SELF], "img-src": [SELF, "data:"],
    "font-src": [SELF], "connect-src": [SELF], "object-src": [NONE], "base-uri": [NONE],
    "frame-ancestors": [NONE], "form-action": [SELF],
}}

# Sign-in throttling: a lockout is for one username from one address, so five bad tries for one
# person lock out that person there, not the whole office behind one address. Admins clear lockouts
# on the Sign-in lockouts screen, and the ledger records who cleared which.
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = 1  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "console/lockout.html"
# The address a lockout counts is the peer waitress resolved (behind nginx, the address nginx wrote in
# X-Forwarded-For), never a header a client chose, whatever IP library is installed (docs/adr/0088).
AXES_CLIENT_IP_CALLABLE = "porto_console.operations.server.client_address"

# Step-up authentication: approvals need a fresh code from the user's TOTP device, and the console
# then signs a proof the ledger checks. Nobody's authenticator secret is shown on any staff screen.
OTP_TOTP_ISSUER = "Porto London"
OTP_TOTP_THROTTLE_FACTOR = 1
OTP_ADMIN_HIDE_SENSITIVE_DATA = True

# Staff enrol their own password and authenticator through a one-time link sent to their work
# email (the address whose digest their ledger account holds); the link expires.
# Where staff reach the console: enrolment links in emails point here.
CONSOLE_URL = _environment.console_url
ENROLMENT_LINK_TTL_S = _environment.enrolment_link_ttl_s
# The first opening spends the link: that browser alone finishes enrolment, within this many seconds.
ENROLMENT_LINK_OPEN_TTL_S = _environment.enrolment_link_open_ttl_s
EMAIL_BACKEND = _environment.email_backend
EMAIL_FILE_PATH = _environment.mail_dir
DEFAULT_FROM_EMAIL = _environment.default_from_email
# Origins a form may be posted from besides the console's own host: PORTO_CSRF_TRUSTED_ORIGINS (comma-separated),
# else the console's https URL.
CSRF_TRUSTED_ORIGINS = list(_environment.csrf_trusted_origins) or (
    [CONSOLE_URL] if CONSOLE_URL.startswith("https://") else [])

# Logs: one JSON object a line (porto_console/operations/json_logging.py), each with the request ID of the
# request it was written for: request errors with their tracebacks, one access line a request, ledger halts
# (CRITICAL, with their cause), security events and the server's own, to stderr and to a rotating file.
# A request is logged by the route it matched, and no line holds a one-time link's token
# (porto_console/operations/log_redaction.py). PORTO_LOG_FORMAT=plain gives the older text lines.
LOG_DIR = _environment.log_dir
LOG_DIR.mkdir(parents=True, exist_ok=True)
LOG_FORMAT = _environment.log_format
_LOG_TO = ["stderr", "file"]
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "porto_console.operations.json_logging.RequestIdFilter"},
                "redact": {"()": "porto_console.operations.json_logging.RedactOneTimeLinks"}},
    "formatters": {
        "json": {"()": "porto_console.operations.json_logging.JsonFormatter"},
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(process)d:%(threadName)s] "
                            "request=%(request_id)s %(message)s"},
    },
    "handlers": {
        "stderr": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_id", "redact"]},
        "file": {"class": "logging.handlers.RotatingFileHandler", "formatter": LOG_FORMAT, "delay": True,
                 "filters": ["request_id", "redact"], "filename": LOG_DIR / "console.log",
                 "maxBytes": 10 * 1024 * 1024,
                 "backupCount": 10},
    },
    "root": {"handlers": _LOG_TO, "level": "WARNING"},
    "loggers": {
        "django.request": {"handlers": _LOG_TO, "level": "ERROR", "propagate": False},
        "django.server": {"handlers": _LOG_TO, "level": "INFO", "propagate": False},  # runserver's request lines
        "django.security": {"handlers": _LOG_TO, "level": "WARNING", "propagate": False},
        "axes": {"handlers": _LOG_TO, "level": "WARNING", "propagate": False},
        "waitress": {"handlers": _LOG_TO, "level": "INFO", "propagate": False},
        "porto": {"handlers": _LOG_TO, "level": "INFO", "propagate": False},
    },
}
