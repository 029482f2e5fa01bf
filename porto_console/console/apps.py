from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class ConsoleConfig(AppConfig):
    name = "porto_console.console"
    label = "console"
    verbose_name = "Porto finance console"

    def ready(self) -> None:
        from porto_console.console import proof_version  # noqa: F401  (a sign-in records the proof version)


class PortoAdminConfig(admin_apps.AdminConfig):
    """The stock admin app, serving the console's site, which registers no stock model screens."""

    default = False
    default_site = "porto_console.console.site.PortoAdminSite"
