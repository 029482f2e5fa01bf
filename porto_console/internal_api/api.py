"""The internal worker API: typed commands and reads for effect workers, never a generic write."""

from ninja import NinjaAPI

api = NinjaAPI(title="Porto internal worker API", version="1", urls_namespace="internal")
