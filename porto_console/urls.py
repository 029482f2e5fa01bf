"""URL routes: the internal worker API, self-service enrolment, health and metrics, and the admin-based console.

The error pages are console pages (``console/views/errors.py``).
"""

from django.contrib import admin
from django.urls import path, re_path

from porto_console.console.views import enrolment
from porto_console.internal_api.api import api as internal_api, unrouted
from porto_console.operations import health, metrics
from porto_console.verifier import statement_verifier

urlpatterns = [
    # Under internal/ only the API answers: its root and any path no route matches are its JSON 404,
    # never the console's pages or login.
    re_path(r"^internal/$", unrouted),
    path("internal/", internal_api.urls),
    re_path(r"^internal/", unrouted),
    path("enrol/", enrolment.enrol, name="enrol"),
    path("enrol/<str:token>/", enrolment.enrol_start, name="enrol-start"),
    path("verify/", statement_verifier, name="statement-verifier"),
    path("healthz", health.healthz, name="healthz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("", admin.site.urls),
]

handler403 = "porto_console.console.views.errors.permission_denied"
handler404 = "porto_console.console.views.errors.not_found"
handler500 = "porto_console.console.views.errors.server_error"
