"""An account's identity sentinel: what the ledger keeps instead of a person's email or provider subject.

It is an HMAC-SHA256 under a deployment secret (the console's ``PORTO_IDENTITY_KEY``) that never enters the
ledger, an export or a backup, so whoever holds those cannot confirm a guessed email (docs/adr/0094). Accounts
provisioned before keyed digests carry an unkeyed SHA-256; their records name no scheme, a keyed one's says
``identity_scheme: hmac-sha256``, so each is checked the way it was made and earlier histories replay unchanged.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any, Mapping

UNKEYED = "sha256"
KEYED = "hmac-sha256"
_UNKEYED_DOMAIN = "porto:identity:v1\n"
_KEYED_DOMAIN = "porto:identity:v2\n"


def keyed_identity_digest(key: bytes, kind: str, evidence: str) -> str:
    return hmac.new(key, f"{_KEYED_DOMAIN}{_normalised(kind, evidence)}".encode(), hashlib.sha256).hexdigest()


def unkeyed_identity_digest(kind: str, evidence: str) -> str:
    """The sentinel of accounts provisioned before keyed digests; never made for a new account."""
    return hashlib.sha256(f"{_UNKEYED_DOMAIN}{_normalised(kind, evidence)}".encode()).hexdigest()


def keyed_identity(key: bytes, kind: str, evidence: str) -> dict[str, str]:
    """The payload fields of a new account's identity."""
    return {"identity_digest": keyed_identity_digest(key, kind, evidence), "identity_scheme": KEYED}


def identity_matches(account: Mapping[str, Any], kind: str, evidence: str, key: bytes) -> bool:
    """Whether ``evidence`` (an email, a provider subject) is the identity ``account`` was provisioned with."""
    scheme = account.get("identity_scheme", UNKEYED)
    made = keyed_identity_digest(key, kind, evidence) if scheme == KEYED else unkeyed_identity_digest(kind, evidence)
    return hmac.compare_digest(made, account["identity_digest"])


def _normalised(kind: str, evidence: str) -> str:
    return f"{kind}\n{evidence.strip().lower()}"
