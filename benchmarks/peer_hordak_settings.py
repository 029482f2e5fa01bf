"""Django settings for the django-hordak peer alone: hordak's apps and the peer's own PostgreSQL database."""

import os

import dj_database_url

from benchmarks.peer_harness import DATABASE_URL_VARIABLE

SECRET_KEY = "peer-benchmark-only"
INSTALLED_APPS = ["django.contrib.contenttypes", "mptt", "djmoney", "hordak"]
DATABASES = {"default": dj_database_url.parse(os.environ[DATABASE_URL_VARIABLE])}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
DEFAULT_CURRENCY = "USD"
HORDAK_INTERNAL_CURRENCY = "USD"
CURRENCIES = ["USD"]
