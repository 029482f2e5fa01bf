"""Signed node evidence: receipts and peer-fill results.

The signature is checked against the key version in force at the evidence's
own time (served or observed), and the version the node names must be that
one. Only then are the signed bytes stored and the command built; its ID comes
from the evidence digest, so a node resending the same bytes gets the same
outcome, and another body for the same receipt is a conflict the rule rejects.
"""

from __future__ import annotations

from pydantic import BaseModel

from ledger_engine.adapters.gateway import CommandGateway, derived_command_id
from ledger_engine.adapters.signatures import PEER_RESULT, RECEIPT, SignedDocument
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.domain.schema.streaming import Node, node_key
from ledger_engine.domain.commands.streaming.nodes import key_in_force
from ledger_engine.domain.commands.streaming.peer_fills import NormalisedPeerResult
from ledger_engine.domain.commands.streaming.receipts import NormalisedReceipt
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import STATE


class NodeEvidenceAdapter:
    def __init__(self, gateway: CommandGateway, *, actor_id: str) -> None:
        self.gateway = gateway
        self.actor_id = actor_id

    def record_receipt(self, body: bytes, signature: bytes) -> CommandOutcome:
        signed = SignedDocument(RECEIPT, body, signature)
        receipt = signed.parse(NormalisedReceipt)
        self._require_signed_in_force(signed, receipt.node_id, receipt.key_version, receipt.served_at_ms)
        return self._record("RecordReceipt", "receipt", receipt, signed)

    def record_peer_result(self, body: bytes, signature: bytes) -> CommandOutcome:
        signed = SignedDocument(PEER_RESULT, body, signature)
        result = signed.parse(NormalisedPeerResult)
        self._require_signed_in_force(signed, result.destination_node_id, result.key_version, result.observed_at_ms)
        return self._record("RecordPeerResult", "result", result, signed)

    def _require_signed_in_force(self, signed: SignedDocument, node_id: str, version: int, at_ms: int) -> None:
        node = self.gateway.existing(STATE, node_key(node_id), f"node {node_id}")
        entry = key_in_force(node.data_as(Node)["key_versions"], at_ms)
        if entry is None or entry["version"] != version:
            raise LedgerError(ErrorCode.KEY_NOT_VALID,
                              f"key version {version} of node {node_id} was not the one in force at {at_ms}")
        signed.require_signed_by(entry["public_key"], f"node {node_id} key version {version}")

    def _record(self, command_type: str, field: str, body: BaseModel, signed: SignedDocument) -> CommandOutcome:
        digest = self.gateway.evidence.put(signed.evidence_bytes())
        return self.gateway.execute(command_type, {field: body.model_dump(mode="json"), "evidence_digest": digest},
                                    actor_id=self.actor_id, command_id=derived_command_id(command_type, digest),
                                    evidence=[digest])
