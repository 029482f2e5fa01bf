"""Opaque handles: ledger IDs sealed for URLs, so request logs carry no domain data.

A handle is the deterministic AES-SIV encryption of ``kind:value`` under a key
derived from ``HANDLE_KEY``, a key of its own (never ``SECRET_KEY``, so a
leaked session-signing key does not let anyone forge or read handles): the
same record always gets the same handle (links can be shared between staff),
nobody without the key can read it, and a handle made for one kind of record
does not open another. A handle that does not open, or opens to something
that is not a ledger ID, is a 404; so is one sealed under an earlier key.
"""

from __future__ import annotations

import base64
import hashlib
import re
from functools import lru_cache

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESSIV
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import Http404

from ledger_engine.envelope import IDENTIFIER_PATTERN


@lru_cache(maxsize=4)
def _cipher(secret: str) -> AESSIV:
    return AESSIV(hashlib.sha512(b"porto:console:handles:v1\n" + secret.encode()).digest())


def _key() -> str:
    if not settings.HANDLE_KEY:
        raise ImproperlyConfigured("PORTO_HANDLE_KEY is not set: sealed handles need a key of their own")
    return settings.HANDLE_KEY


def seal(kind: str, value: str) -> str:
    token = _cipher(_key()).encrypt(value.encode(), [kind.encode()])
    return base64.urlsafe_b64encode(token).decode().rstrip("=")


def unseal(kind: str, handle: str) -> str:
    """The value behind ``handle``; a forged, truncated, stale or foreign handle is a 404."""
    try:
        token = base64.urlsafe_b64decode(handle + "=" * (-len(handle) % 4))
        return _cipher(_key()).decrypt(token, [kind.encode()]).decode()
    except (ValueError, InvalidTag, UnicodeDecodeError):
        raise Http404("unknown record") from None


def unseal_ids(kind: str, handle: str, count: int = 1) -> list[str]:
    """The ``count`` ledger IDs sealed as ``a/b/...``; anything else behind a valid seal is a 404 too."""
    parts = unseal(kind, handle).split("/")
    if len(parts) != count or not all(re.fullmatch(IDENTIFIER_PATTERN, part) for part in parts):
        raise Http404("unknown record")
    return parts


def unseal_id(kind: str, handle: str) -> str:
    return unseal_ids(kind, handle)[0]
