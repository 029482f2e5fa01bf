from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "porto_console.console"
    label = "console"
    verbose_name = "Porto finance console"
