"""URL routes: the internal worker API and the admin-based console."""

from django.contrib import admin
from django.urls import path

from porto_console.internal_api.api import api as internal_api
from porto_console.verifier import statement_verifier

urlpatterns = [
    path("internal/", internal_api.urls),
    path("verify/", statement_verifier, name="statement-verifier"),
    path("", admin.site.urls),
]
