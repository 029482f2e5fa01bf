"""Node inputs: applications, key rotations and health observations.

An application is signed by the node's first key (proof that the applicant
holds it); a scheduled rotation to version n is signed by version n - 1.
Health observations come from our own probes, a trusted input, and carry no
signature. Rotations for a compromised key are ops decisions and go through
the gateway directly.
"""

from __future__ import annotations

from ledger_engine.adapters.gateway import CommandGateway, derived_command_id, new_id
from ledger_engine.adapters.signatures import KEY_ROTATION, NODE_ADMISSION, SignedDocument
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.domain.schema.streaming import Node, node_key
from ledger_engine.domain.commands.streaming.nodes import (
    HealthObservation, KeyRotationRequest, NodeApplication, key_version,
)
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import STATE


class NodeAdapter:
    def __init__(self, gateway: CommandGateway, *, actor_id: str) -> None:
        self.gateway = gateway
        self.actor_id = actor_id

    def admit(self, body: bytes, signature: bytes) -> CommandOutcome:
        signed = SignedDocument(NODE_ADMISSION, body, signature)
        application = signed.parse(NodeApplication)
        signed.require_signed_by(application.public_key, f"node {application.node_id}'s first key")
        digest = self.gateway.evidence.put(signed.evidence_bytes())
        return self.gateway.execute("AdmitNode", {**application.model_dump(mode="json"), "evidence_digest": digest},
                                    actor_id=self.actor_id, command_id=derived_command_id("AdmitNode", digest),
                                    evidence=[digest])

    def rotate_key(self, body: bytes, signature: bytes) -> CommandOutcome:
        signed = SignedDocument(KEY_ROTATION, body, signature)
        request = signed.parse(KeyRotationRequest)
        node = self.gateway.existing(STATE, node_key(request.node_id), f"node {request.node_id}")
        signer = key_version(node.data_as(Node), request.version - 1)
        if signer is None:
            raise LedgerError(ErrorCode.KEY_NOT_VALID,
                              f"node {request.node_id} has no key version {request.version - 1} to sign with")
        signed.require_signed_by(signer["public_key"], f"node {request.node_id} key version {signer['version']}")
        digest = self.gateway.evidence.put(signed.evidence_bytes())
        payload = {**request.model_dump(mode="json"), "reason": "scheduled", "evidence_digest": digest}
        return self.gateway.execute_once(derived_command_id("RotateNodeKey", digest), lambda: {
            "command_type": "RotateNodeKey", "payload": payload, "actor_id": self.actor_id, "evidence": [digest],
            "expected": [{"cf": STATE, "key": node_key(request.node_id), "revision": node.revision}],
        })

    def record_health(self, observation: HealthObservation) -> CommandOutcome:
        payload = {**observation.model_dump(mode="json"), "report_id": new_id()}
        return self.gateway.execute("RecordNodeHealth", payload, actor_id=self.actor_id)
