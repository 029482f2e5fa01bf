from django.apps import AppConfig


class InternalApiConfig(AppConfig):
    name = "porto_console.internal_api"
    label = "internal_api"
    verbose_name = "Internal worker API"
