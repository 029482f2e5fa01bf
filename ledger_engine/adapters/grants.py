"""Grants: the nonce stays with the caller, only its hash enters the ledger.

``issue`` draws a fresh nonce, numbers the grant in this coordinator's
sequence and returns the grant token ``{"grant_id", "nonce"}`` to hand to the
player. ``consume`` checks a presented nonce against the grant's recorded
hash before building the command, so a wrong nonce is refused before
admission. A grant whose issue response was lost is not recovered (its nonce
is gone); the player asks for a new one.
"""

from __future__ import annotations

import hashlib
import secrets
import threading

from ledger_engine.adapters.gateway import CommandGateway, derived_command_id, new_id
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.domain.schema.streaming import coordinator_key, grant_key
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import STATE
from ledger_engine.open_json import Report


def nonce_hash(nonce: bytes) -> str:
    return hashlib.sha256(nonce).hexdigest()


class GrantAdapter:
    def __init__(self, gateway: CommandGateway, *, actor_id: str) -> None:
        self.gateway = gateway
        self.actor_id = actor_id
        recorded = gateway.ledger.get(STATE, coordinator_key(actor_id))
        self._sequence = recorded.data["last_sequence"] if recorded else 0
        # Issued one at a time, so the ledger sees this coordinator's sequence in order.
        self._issuing = threading.Lock()

    def issue(self, *, node_id: str, rendition_id: str, chunk_index: int, ttl_ms: int,
              session_id: str | None = None, destination_node_id: str | None = None
              ) -> tuple[CommandOutcome, Report]:
        nonce = secrets.token_bytes(32)
        grant_id = new_id()
        with self._issuing:
            payload = {"grant_id": grant_id, "purpose": "playback" if session_id else "peer_fill",
                       "node_id": node_id, "rendition_id": rendition_id, "chunk_index": chunk_index,
                       "nonce_hash": nonce_hash(nonce), "expires_at_ms": self.gateway.now_ms() + ttl_ms,
                       "coordinator_sequence": self._sequence + 1}
            payload |= {"session_id": session_id} if session_id else {"destination_node_id": destination_node_id}
            outcome = self.gateway.execute("IssueGrant", payload, actor_id=self.actor_id)
            if outcome.accepted:
                self._sequence += 1
        return outcome, {"grant_id": grant_id, "nonce": nonce.hex()}

    def consume(self, grant_id: str, nonce_hex: str, request_id: str) -> CommandOutcome:
        grant = self.gateway.existing(STATE, grant_key(grant_id), f"grant {grant_id}")
        try:
            presented = nonce_hash(bytes.fromhex(nonce_hex))
        except ValueError:
            raise LedgerError(ErrorCode.INVALID_PAYLOAD, "a nonce is hex") from None
        if not secrets.compare_digest(presented, grant.data["nonce_hash"]):
            raise LedgerError(ErrorCode.SIGNATURE_INVALID, f"the nonce does not open grant {grant_id}")
        payload = {"grant_id": grant_id, "request_id": request_id, "nonce_hash": presented}
        return self.gateway.execute_once(derived_command_id("ConsumeGrant", grant_id), lambda: {
            "command_type": "ConsumeGrant", "payload": payload, "actor_id": self.actor_id,
        }, minted=("request_id",))
