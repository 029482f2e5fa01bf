"""The admin site that hosts the console: the ledger screens, and no stock model screens at all.

Django's own Users, Groups, authenticator and sign-in-attempt screens would let
an admin set any password, read any authenticator secret, tick
``is_superuser`` or join any group. None of them is registered here: staff
accounts, roles and credentials change only through the console's
ledger-backed screens (Accounts, Staff changes, Sign-in lockouts), and a
superuser exists only through ``manage.py createsuperuser`` on the host.
"""

from __future__ import annotations

import logging

from django.contrib.admin import AdminSite
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse

from porto_console.console.roles import has_role
from porto_console.console.screens import DASHBOARD, SCREENS

log = logging.getLogger("porto.console.site")


class PortoAdminSite(AdminSite):
    site_header = "Porto London finance console"
    site_title = "Porto console"
    index_title = "Administration"
    site_url = None  # the console is the whole site

    def register(self, model_or_iterable, admin_class=None, **options) -> None:
        """Refuse every model screen, whichever app offers one (auth, django-otp, axes, ...)."""
        log.debug("not registering a model screen for %s", model_or_iterable)

    def get_urls(self):
        from porto_console.console.urls import console_urls

        return console_urls(self) + super().get_urls()

    def get_app_list(self, request, app_label=None):
        screens = [screen for screen in SCREENS if has_role(request.user, screen.roles)]
        return [_ledger_app(screens, self.name)] if app_label is None and screens else []

    def index(self, request, extra_context=None):
        """A console user lands on the dashboard; anyone else is told why there is nothing here."""
        if has_role(request.user, DASHBOARD.roles):
            return redirect(f"admin:{DASHBOARD.url_name}")
        return TemplateResponse(request, "console/no_role.html", {**self.each_context(request), "title": "No role"})

    def password_change(self, request, extra_context=None):
        from porto_console.console.views.enrolment import password_change

        return password_change(request)


def _ledger_app(screens, site_name: str) -> dict:
    """The ledger screens as one entry of the admin's app list, so the navigation shows them."""
    models = [{"name": screen.title, "object_name": screen.url_name.replace("-", "_"), "perms": {"view": True},
               "admin_url": reverse(f"admin:{screen.url_name}", current_app=site_name), "add_url": None,
               "view_only": True} for screen in screens]
    return {"name": "Ledger", "app_label": "ledger", "app_url": models[0]["admin_url"],
            "has_module_perms": True, "models": models}
