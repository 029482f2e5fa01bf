"""Opaque handles: ledger IDs sealed for URLs, so request logs carry no domain data.

A handle is the deterministic AES-SIV encryption of ``kind:value`` under a key
derived from SECRET_KEY: the same record always gets the same handle (links
can be shared between staff), nobody without the key can read it, and a
handle made for one kind of record does not open another.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESSIV
from django.conf import settings
from django.http import Http404


@lru_cache(maxsize=4)
def _cipher(secret: str) -> AESSIV:
    return AESSIV(hashlib.sha512(b"porto:console:handles:v1\n" + secret.encode()).digest())


def seal(kind: str, value: str) -> str:
    token = _cipher(settings.SECRET_KEY).encrypt(value.encode(), [kind.encode()])
    return base64.urlsafe_b64encode(token).decode().rstrip("=")


def unseal(kind: str, handle: str) -> str:
    """The value behind ``handle``; a forged, truncated or foreign handle is a 404."""
    try:
        token = base64.urlsafe_b64decode(handle + "=" * (-len(handle) % 4))
        return _cipher(settings.SECRET_KEY).decrypt(token, [kind.encode()]).decode()
    except (ValueError, InvalidTag, UnicodeDecodeError):
        raise Http404("unknown record") from None
