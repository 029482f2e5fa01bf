"""Step-up proofs: a person's fresh second factor, bound to one command, checked by the ledger itself.

The ledger cannot check an authenticator code: rules are pure and a TOTP
secret must never enter the ledger. So the console's step-up service, right
after it has verified a fresh code for the signed-in user, signs a proof for
exactly the command it is about to submit. The proof travels in the command's
payload as ``step_up`` = ``{"issued_at_ms", "signature"}``; the signature is
Ed25519 over

    UTF8("porto:london:step-up:v1\\n") || JCS({command_id, command_type, actor_id,
                                             payload_sha256, issued_at_ms})

where ``payload_sha256`` covers the payload without ``step_up``. The rule
verifies it against the step-up verifier key held in ledger state (set in
genesis, changed only by two admins), so a proof opens one command by one
actor, and is fresh: issued at most ``PROOF_TTL_MS`` before admission and never
after it. Nothing else mints proofs: worker credentials and the internal API
cannot, so no worker token can approve.

A command type declares in the registry which of its payloads need a proof
(``@command(..., step_up=...)``); the registry checks it before the rule runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from pydantic import BaseModel, ConfigDict, Field

from ledger_engine.canonical import MAX_SAFE_INTEGER, canonical_bytes, domain_hash
from ledger_engine.domain.changes import require, require_present
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import key
from ledger_engine.layout import STATE
from ledger_engine.open_json import RecordData, Unvalidated

if TYPE_CHECKING:
    from ledger_engine.domain.registry import RuleContext

PROOF_FIELD = "step_up"
PROOF_DOMAIN = "porto:london:step-up:v1\n"
PAYLOAD_DOMAIN = "porto:london:step-up-payload:v1\n"
PROOF_TTL_MS = 120_000
PUBLIC_KEY_PATTERN = r"^[0-9a-f]{64}$"
VERIFIER_KEY = key("step_up_verifier")


class StepUpProof(BaseModel):
    """What a command carries in ``payload.step_up``."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    issued_at_ms: int = Field(ge=0, le=MAX_SAFE_INTEGER)
    signature: str = Field(pattern=r"^[0-9a-f]{128}$")


def without_proof(payload: Unvalidated) -> Unvalidated:
    return {name: value for name, value in payload.items() if name != PROOF_FIELD}


def proof_message(*, command_id: str, command_type: str, actor_id: str, payload: Unvalidated,
                  issued_at_ms: int) -> bytes:
    """The exact bytes a proof signs, for this command's payload (with or without a proof in it)."""
    document = {"command_id": command_id, "command_type": command_type, "actor_id": actor_id,
                "payload_sha256": domain_hash(PAYLOAD_DOMAIN, without_proof(payload)),
                "issued_at_ms": issued_at_ms}
    return PROOF_DOMAIN.encode() + canonical_bytes(document)


def sign(private_key: Ed25519PrivateKey, *, command_id: str, command_type: str, actor_id: str,
         payload: Unvalidated, issued_at_ms: int) -> Unvalidated:
    """The issuer's side: a proof for this command. Only a step-up service that verified a code calls it."""
    message = proof_message(command_id=command_id, command_type=command_type, actor_id=actor_id, payload=payload,
                            issued_at_ms=issued_at_ms)
    return {"issued_at_ms": issued_at_ms, "signature": private_key.sign(message).hex()}


def with_proof(envelope: Unvalidated, private_key: Ed25519PrivateKey, *,
               issued_at_ms: int | None = None) -> Unvalidated:
    """``envelope`` with a proof in its payload, issued at admission unless stated."""
    issued = envelope["admitted_at_ms"] if issued_at_ms is None else issued_at_ms
    proof = sign(private_key, command_id=envelope["command_id"], command_type=envelope["command_type"],
                 actor_id=envelope["actor_id"], payload=envelope["payload"], issued_at_ms=issued)
    return {**envelope, "payload": {**without_proof(envelope["payload"]), PROOF_FIELD: proof}}


def public_key_hex(private_key: Ed25519PrivateKey) -> str:
    return private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def verifier_record(public_key: str) -> RecordData:
    return {"public_key": public_key}


def require_proof(ctx: "RuleContext") -> None:
    """The command's proof is present, signed by the registered verifier key for this very command, and fresh."""
    envelope = ctx.envelope
    raw = envelope.payload.get(PROOF_FIELD)
    require(raw is not None, ErrorCode.STEP_UP_REQUIRED,
            f"{envelope.command_type} needs a fresh authenticator proof from the console's step-up service")
    verifier = require_present(ctx.changes.get(STATE, VERIFIER_KEY), ErrorCode.STEP_UP_REQUIRED,
                               "no step-up verifier key is registered in this ledger")
    proof = StepUpProof.model_validate(raw)  # admission already refused a malformed proof
    message = proof_message(command_id=envelope.command_id, command_type=envelope.command_type,
                            actor_id=envelope.actor_id, payload=envelope.payload, issued_at_ms=proof.issued_at_ms)
    require(_verified(verifier.data["public_key"], proof.signature, message), ErrorCode.STEP_UP_INVALID,
            f"the step-up proof was not issued for this {envelope.command_type} by {envelope.actor_id}")
    age_ms = envelope.admitted_at_ms - proof.issued_at_ms
    require(0 <= age_ms <= PROOF_TTL_MS, ErrorCode.STEP_UP_EXPIRED,
            f"the step-up proof was issued {age_ms} ms before admission; it must be between 0 and {PROOF_TTL_MS}")


def _verified(public_key: str, signature: str, message: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key)).verify(bytes.fromhex(signature), message)
    except (InvalidSignature, ValueError):
        return False
    return True
