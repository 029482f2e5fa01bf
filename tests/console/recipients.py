"""How a screen shows a recipient (the ``recipient`` template tag), for tests that find one in a page."""

from __future__ import annotations

from django.utils.html import escape


def unnamed(recipient_id: str) -> str:
    """A recipient without a display name: its ID alone."""
    return f'<span class="recipient"><code class="record-id">{escape(recipient_id)}</code></span>'


def named(name: str, recipient_id: str) -> str:
    """A recipient by its display name, isolated, with its ID beside it."""
    return (f'<span class="recipient"><bdi class="display-name">{escape(name)}</bdi> '
            f'<code class="record-id">{escape(recipient_id)}</code></span>')
