"""Keys of a deployment's own, as a production console is configured: nothing for ``safety.problems`` to refuse."""

from __future__ import annotations

from typing import Any


def keys_of_its_own(settings: Any) -> None:
    """Set every deployment key the console refuses to serve without (pytest-django's ``settings`` restores them)."""
    settings.SECRET_KEY, settings.HANDLE_KEY = "s" * 40, "h" * 40
    settings.IDENTITY_KEY = "i" * 40
