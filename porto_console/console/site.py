"""The admin site that hosts the console: the ledger screens beside the stock Users and Groups."""

from __future__ import annotations

from django.contrib.admin import AdminSite
from django.shortcuts import redirect
from django.urls import reverse

from porto_console.console.roles import has_role
from porto_console.console.screens import DASHBOARD, SCREENS


class PortoAdminSite(AdminSite):
    site_header = "Porto London finance console"
    site_title = "Porto console"
    index_title = "Administration"
    site_url = None  # the console is the whole site

    def get_urls(self):
        from porto_console.console.urls import console_urls

        return console_urls(self) + super().get_urls()

    def get_app_list(self, request, app_label=None):
        app_list = super().get_app_list(request, app_label)
        screens = [screen for screen in SCREENS if has_role(request.user, screen.roles)]
        if app_label is None and screens:
            app_list.insert(0, _ledger_app(screens, self.name))
        return app_list

    def index(self, request, extra_context=None):
        """A console user lands on the dashboard; anyone else gets the stock index."""
        if has_role(request.user, DASHBOARD.roles):
            return redirect(f"admin:{DASHBOARD.url_name}")
        return super().index(request, extra_context)


def _ledger_app(screens, site_name: str) -> dict:
    """The ledger screens as one entry of the admin's app list, so the navigation shows them."""
    models = [{"name": screen.title, "object_name": screen.url_name.replace("-", "_"), "perms": {"view": True},
               "admin_url": reverse(f"admin:{screen.url_name}", current_app=site_name), "add_url": None,
               "view_only": True} for screen in screens]
    return {"name": "Ledger", "app_label": "ledger", "app_url": models[0]["admin_url"],
            "has_module_perms": True, "models": models}
