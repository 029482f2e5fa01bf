"""The signed-commitment journal: every signed batch commitment, on disk before it can be broadcast.

``PORTO_COMMITMENT_JOURNAL``: the commitment session's memory of which
commitment a batch last signed, the committer's sequence allocator, and an
independent record of every commitment ever signed (see ``signed_journal``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ledger_engine.open_json import Document
from porto_console.effects.signed_journal import SignedBytes, SignedJournal
from porto_console.effects.transactions import CommitmentTerms, SignedTransfer, commitment_payload


@dataclass(frozen=True, slots=True)
class SignedCommitmentRecord(SignedBytes):
    batch_id: str
    effect_id: str
    worker_id: str
    transaction_hash: str
    sender: str
    sequence_number: int
    artifact_hash: str
    count: int
    expiration_secs: int
    chain_id: int
    signed_bytes_hex: str
    recorded_at_ms: int
    # The journal tree the commitment anchors; records signed before it anchored the journal lack them.
    journal_size: int | None = None
    journal_root: str | None = None

    @classmethod
    def of(cls, batch_id: str, effect_id: str, worker_id: str, commitment: SignedTransfer[CommitmentTerms],
           recorded_at_ms: int) -> "SignedCommitmentRecord":
        terms = commitment.terms
        return cls(batch_id, effect_id, worker_id, commitment.transaction_hash, terms.sender, terms.sequence_number,
                   terms.artifact_hash, terms.count, terms.expiration_secs, terms.chain_id,
                   commitment.signed_bytes.hex(), recorded_at_ms, terms.journal_size, terms.journal_root)

    @property
    def subject(self) -> str:
        return self.batch_id

    def payload_json(self) -> Document:
        return commitment_payload(self.sender, self.artifact_hash, self.count, self.journal_root, self.journal_size)


COMMITMENT_DOMAIN = "porto:london:signed-commitment:v1\n"


class SignedCommitmentJournal(SignedJournal[SignedCommitmentRecord]):
    domain = COMMITMENT_DOMAIN
    record_type = SignedCommitmentRecord
