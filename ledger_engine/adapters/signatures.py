"""Ed25519 signed documents: a JSON body and a detached signature over a domain-separated message.

The signer signs ``domain || body`` where the domain names what the body is
(a receipt cannot be replayed as a key rotation). The evidence stored for a
signed document keeps the exact body bytes that were signed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TypeVar

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from pydantic import BaseModel, ValidationError

from ledger_engine.canonical import canonical_bytes, parse_json
from ledger_engine.envelope import pydantic_error_code
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.open_json import JsonObject

RECEIPT = "porto:london:receipt:v1\n"
PEER_RESULT = "porto:london:peer-result:v1\n"
NODE_ADMISSION = "porto:london:node-admission:v1\n"
KEY_ROTATION = "porto:london:key-rotation:v1\n"
BILLING_EVENT = "porto:london:billing-event:v1\n"

Model = TypeVar("Model", bound=BaseModel)


@dataclass(frozen=True)
class SignedDocument:
    """What a node or provider sends: the body bytes exactly as signed, and the signature."""

    domain: str
    body: bytes
    signature: bytes

    def evidence_bytes(self) -> bytes:
        """The stored form: canonical JSON holding the signed body verbatim."""
        try:
            body_text = self.body.decode("utf-8")
        except UnicodeDecodeError:
            raise LedgerError(ErrorCode.INVALID_PAYLOAD, "a signed body is UTF-8 JSON") from None
        return canonical_bytes({"scheme": "ed25519", "domain": self.domain, "body": body_text,
                                "signature": self.signature.hex()})

    def parse(self, model: type[Model]) -> Model:
        """The body as ``model``; malformed bodies are refused with a stable code."""
        document = parse_json(self.body)
        try:
            return model.model_validate(document)
        except ValidationError as error:
            raise LedgerError(*pydantic_error_code(error, ErrorCode.INVALID_PAYLOAD)) from None

    def verified_by(self, public_key_hex: str) -> bool:
        try:
            public_key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key_hex))
            public_key.verify(self.signature, self.domain.encode() + self.body)
        except (InvalidSignature, ValueError):
            return False
        return True

    def require_signed_by(self, public_key_hex: str, signer: str) -> None:
        if not self.verified_by(public_key_hex):
            raise LedgerError(ErrorCode.SIGNATURE_INVALID, f"the signature is not {signer}'s")


def sign(private_key: Ed25519PrivateKey, domain: str, body: JsonObject) -> SignedDocument:
    """The signer's side, as nodes, providers, tests and the demo use it."""
    raw = canonical_bytes(body)
    return SignedDocument(domain, raw, private_key.sign(domain.encode() + raw))


def key_from_seed(seed: str) -> Ed25519PrivateKey:
    """A deterministic key for fixtures: the private key bytes are SHA-256 of ``seed``."""
    return Ed25519PrivateKey.from_private_bytes(hashlib.sha256(seed.encode()).digest())


def public_key_hex(private_key: Ed25519PrivateKey) -> str:
    return private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
