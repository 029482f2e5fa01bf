"""WSGI entry point: the serving process owns the ledger and refuses unsafe keys before it serves."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "porto_console.settings")
application = get_wsgi_application()

from porto_console.console.safety import prepare  # noqa: E402  (needs the settings above)
from porto_console.ledger import open_owner  # noqa: E402

prepare(open_owner())
