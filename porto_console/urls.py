"""URL routes: the internal worker API and the admin-based console."""

from django.contrib import admin
from django.urls import path

from porto_console.internal_api.api import api as internal_api

urlpatterns = [
    path("internal/", internal_api.urls),
    path("", admin.site.urls),
]
