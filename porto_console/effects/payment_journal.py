"""The signed-payment journal: every signed transfer, durable before it can be broadcast.

A file (``PORTO_PAYMENT_JOURNAL``) or PostgreSQL (``PORTO_SIGNER_JOURNAL_URL``,
``pg_journal``): the payment session's memory of which transfer a payment
last signed, the payer's sequence allocator, and the independent record
reconcile compares with the chain and a restored ledger (see
``signed_journal`` and ``journal_port``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from ledger_engine.open_json import Document
from porto_console.effects.journal_port import JournalPort
from porto_console.effects.signed_journal import JournalCorrupt, SignedBytes, SignedJournal, SignRequest
from porto_console.effects.transactions import SignedTransfer, TransferTerms, transfer_payload

__all__ = ["JournalCorrupt", "PaymentJournal", "PaymentToSign", "SignedPaymentJournal", "SignedPaymentRecord"]


@dataclass(frozen=True, slots=True)
class SignedPaymentRecord(SignedBytes):
    payment_id: str
    effect_id: str
    worker_id: str
    transaction_hash: str
    sender: str
    sequence_number: int
    recipient: str
    asset_metadata: str
    amount: str
    expiration_secs: int
    chain_id: int
    signed_bytes_hex: str
    recorded_at_ms: int

    @classmethod
    def of(cls, payment_id: str, effect_id: str, worker_id: str, transfer: SignedTransfer[TransferTerms],
           recorded_at_ms: int) -> "SignedPaymentRecord":
        terms = transfer.terms
        return cls(payment_id, effect_id, worker_id, transfer.transaction_hash, terms.sender, terms.sequence_number,
                   terms.recipient, terms.asset_metadata, str(terms.amount), terms.expiration_secs,
                   terms.chain_id, transfer.signed_bytes.hex(), recorded_at_ms)

    @property
    def subject(self) -> str:
        return self.payment_id

    def payload_json(self) -> Document:
        return transfer_payload(self.asset_metadata, self.recipient, self.amount)


PAYMENT_DOMAIN = "porto:london:signed-payment:v1\n"


@dataclass(frozen=True, slots=True)
class PaymentToSign:
    """A payment to sign a transfer for, if its last one cannot land: ``sign(sequence)`` signs it."""

    payment_id: str
    effect_id: str
    sign: Callable[[int], SignedTransfer[TransferTerms]]


class PaymentJournal(JournalPort[SignedPaymentRecord], Protocol):
    """What the payment session asks of either journal adapter (``journal_port``), in payment words.

    An adapter lists it after its journal class among its bases, so the journal's methods, not this protocol's
    declarations, are the ones found."""

    def sign_next(self, *, payment_id: str, effect_id: str, worker_id: str, sender: str, chain_sequence: int,
                  chain_time_secs: int, reuse: Callable[[SignedPaymentRecord], bool],
                  sign: Callable[[int], SignedTransfer[TransferTerms]],
                  now_ms: int) -> tuple[SignedPaymentRecord, bool]:
        """The payment's last signed transfer if ``reuse`` accepts it, else a new one at a free sequence."""
        return self.sign_next_for(
            payment_id, sender=sender, chain_sequence=chain_sequence, chain_time_secs=chain_time_secs, reuse=reuse,
            sign=lambda sequence: SignedPaymentRecord.of(payment_id, effect_id, worker_id, sign(sequence), now_ms))

    def sign_payments(self, payments: Sequence[PaymentToSign], *, worker_id: str, sender: str, chain_sequence: int,
                      chain_time_secs: int, reuse: Callable[[SignedPaymentRecord], bool], window: int,
                      now_ms: int) -> list[tuple[SignedPaymentRecord, bool] | None]:
        """Each payment's last signed transfer if ``reuse`` accepts it, else a new one at a free sequence of the
        sender's window (True); None where the window is full. One lock and one sync for them all."""
        def request(payment: PaymentToSign) -> SignRequest[SignedPaymentRecord]:
            return SignRequest(payment.payment_id, lambda sequence: SignedPaymentRecord.of(
                payment.payment_id, payment.effect_id, worker_id, payment.sign(sequence), now_ms))

        return self.sign_batch_for([request(payment) for payment in payments], sender=sender,
                                   chain_sequence=chain_sequence, chain_time_secs=chain_time_secs, reuse=reuse,
                                   window=window)

    def for_payment(self, payment_id: str) -> list[SignedPaymentRecord]:
        return self.for_subject(payment_id)


class SignedPaymentJournal(SignedJournal[SignedPaymentRecord], PaymentJournal):
    """The file adapter: ``PORTO_PAYMENT_JOURNAL``."""

    domain = PAYMENT_DOMAIN
    record_type = SignedPaymentRecord
