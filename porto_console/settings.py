"""Django settings. Embedded defaults for `make run`; real services through the environment."""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = os.environ.get("DJANGO_DEBUG", "0") == "1"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "porto-local-only-secret-key-change-me-in-deployment")
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver").split(",")

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
    "porto_console.console",
    "porto_console.internal_api",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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
            ],
        },
    },
]

VAR_DIR = Path(os.environ.get("PORTO_VAR_DIR", BASE_DIR / "var"))
DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{VAR_DIR / 'console.sqlite3'}", conn_max_age=60
    )
}

# The ledger this process owns. Only one process may open it read-write.
LEDGER_DATA_DIR = Path(os.environ.get("DATA_DIR", VAR_DIR / "ledger"))
# The admission gateway's durable envelopes and evidence for that ledger.
ADMISSION_DIR = Path(os.environ.get("ADMISSION_DIR", LEDGER_DATA_DIR.parent / "admission"))

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "memory://")
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", "cache+memory://")

# Verified backups (docs/effects.md): beside the data directory, never inside it, so a restore
# cannot overwrite its own source and a backup never counts as ledger data.
BACKUP_DIR = Path(os.environ.get("PORTO_BACKUP_DIR", LEDGER_DATA_DIR.parent / "backups")).resolve()
if BACKUP_DIR.is_relative_to(LEDGER_DATA_DIR.resolve()):
    raise ImproperlyConfigured(f"PORTO_BACKUP_DIR {BACKUP_DIR} is inside the ledger data directory")
# Effects the workers parked for an operator; the same directory as the workers' PORTO_QUARANTINE_DIR.
QUARANTINE_DIR = Path(os.environ.get("PORTO_QUARANTINE_DIR", VAR_DIR / "effects" / "quarantine"))
# Announce new effects to the workers after commit. Off without a broker and a signer (`make run`):
# the embedded broker would run payment tasks inside the request. PORTO_EFFECTS_ENABLED=1/0 overrides.
EFFECTS_ENABLED = os.environ.get("PORTO_EFFECTS_ENABLED", "1" if (
    os.environ.get("CELERY_BROKER_URL")
    and (os.environ.get("PORTO_SIGNER_KEY") or os.environ.get("PORTO_SIGNER_KEY_FILE"))) else "0") == "1"

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
SECURE_COOKIES = os.environ.get("PORTO_SECURE_COOKIES", "0") == "1"
SESSION_COOKIE_SECURE = SECURE_COOKIES
CSRF_COOKIE_SECURE = SECURE_COOKIES

# Login throttling and lockout.
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = 1  # hours
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True

# Step-up authentication: money actions need a fresh code from the user's TOTP device.
OTP_TOTP_ISSUER = "Porto London"
OTP_TOTP_THROTTLE_FACTOR = 1
