"""URL routes: the admin-based console and the internal worker API."""

from django.contrib import admin
from django.urls import path

urlpatterns = [
    path("", admin.site.urls),
]
