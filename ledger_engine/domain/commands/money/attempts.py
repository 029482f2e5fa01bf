"""Payment attempts: RecordSignedAttempt, RecordTransferObservation and RecordLandedAttempt.

The pipeline, one ``payment.transfer`` effect per payment (docs/spec/durable-effect-sessions.md §2: one
durable session per payment, signed bytes persisted before any broadcast):

1. A payment worker claims the payment's effect (ClaimEffect, the
   ``dispatcher`` role).
2. The same worker, as ``signer``, signs and records the attempt under its own
   live claim (``claimed_by`` names it; another's claim is CLAIM_HELD): exact
   signed-bytes reference and hash, transaction hash, sender address and
   sequence, expiry, and the recipient address and amount it signed. The
   sender must be the payer the ledger names (``domain/payer.py``). Only after
   this command is accepted may the bytes be broadcast.
3. The worker broadcasts those bytes and completes the effect:
   ``submitted``, or ``unknown`` when the answer was lost (payment uncertain).
4. Another worker, one that works payments (``dispatcher``) and observes,
   records what the chain says about the attempt: an observer of commitments
   does not settle payments, and the attempt's own signer never attests its
   chain (FOUR_EYES_REQUIRED; no account holds ``signer`` with ``observer``,
   docs/adr/0090), so settling a payment always takes two credentials.

``payment_attempt/<attempt_id>`` keeps the attempt; ``unique/sender/<address>/<seq20>``
and ``unique/transaction/<hash>`` make sender sequences and transaction hashes
unique. An attempt's outcome goes pending -> submitted -> confirmed | failed |
expired (or straight to a final one). A new attempt may be signed only once
the last one is proven failed or expired, so at most one attempt of a payment
is ever unresolved, and an obligation is paid at most once.

Observations may arrive in any order, any number of times:

- the same outcome again, or ``submitted`` after ``confirmed`` or ``failed``,
  is accepted and changes nothing (``"changed": false``);
- an outcome contradicting a recorded final one (confirmed vs failed or
  expired, or ``submitted`` after ``expired``) is CONFLICTING_EVIDENCE;
- ``expired`` needs the chain's time, as the observation reads it, at or past
  the attempt's expiry: the chain's clock decides whether a transaction can
  still land, whatever the ledger's clock says. That chain time may lie at
  most ``MAX_CHAIN_CLOCK_SKEW_MS`` ahead of the ledger's own clock.

A signed attempt's expiry is judged the same way: the signer states the
chain time it set the expiry from (``chain_time_ms``, within
``MAX_CHAIN_CLOCK_SKEW_MS`` of the ledger's clock either way), so a chain
whose clock runs minutes behind or ahead of the console's neither has every
attempt refused as expired nor lets one pin its payment for longer than
``MAX_ATTEMPT_TTL_MS``. An attempt that states no chain time (every one
journalled before it could) is judged by the ledger's clock.

On Aptos a transaction the chain committed used its sender sequence, whether
it executed successfully (``confirmed``) or aborted (``failed``); one that
expired was never committed, so its sequence is still unused. Observing an
attempt ``expired`` therefore releases its sender sentinel for a later
attempt; the transaction-hash sentinel is never released.

RecordLandedAttempt is reconciliation after a restore: the chain committed a
transaction whose attempt the restored ledger never recorded. It records the
attempt and its chain observation together, without the live claim and the
future expiry that only guard a broadcast still to come (a committed
transaction is never broadcast again), so it asks for what stands in for them
(a *reconciled* claim): nobody but the signer of its bytes holds a live claim
on the payment's effect (a holder records its own attempts), and the effect
is still open. It is an observation, so an observer of payments records it,
naming the signer whose journal holds the bytes (``signed_by``, an actor that
holds ``signer`` and is not the observer): the payer's signature on the bytes,
which the internal API verifies, is the signer's part. The payment must
otherwise be signable, so an
obligation already paid (ALREADY_PAID) or with another attempt in flight
(RECONCILIATION_REQUIRED) is never paid again.

Only an attempt recorded under a live claim (``claimed_by``) or a reconciled
one (``reconciled``) is ever confirmed, and only by an observation of its own
transaction citing chain evidence other than its signed bytes. While an
update of the payment's recipient is pending nothing is signed to it, and an
attempt that fails meanwhile leaves its payment held (recipient_updates.py).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ledger_engine.amounts import Amount
from ledger_engine.domain.actors import require_other_actor
from ledger_engine.domain.changes import Changes, Rejected, require
from ledger_engine.domain.commands.money import outbox, payments
from ledger_engine.domain.commands.money.payout_runs import require_within_cap
from ledger_engine.domain.commands.money.recipient_updates import place_unsigned
from ledger_engine.domain.commands.money.recipients import load_recipient, require_no_pending_update
from ledger_engine.domain.commands.money.lifecycle import load
from ledger_engine.domain.invariants import require_conserved, require_payouts_unblocked
from ledger_engine.domain.payer import require_payer_sends
from ledger_engine.domain.provenance import created
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.schema.money_payouts import Effect, Payment, PaymentAttempt, attempt_key
from ledger_engine.domain.schema.staff import actor_key
from ledger_engine.domain.types import ChainAddress, Count, Digest, Identifier, TimestampMs
from ledger_engine.domain.view import shaped
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import key, seq20
from ledger_engine.layout import STATE
from ledger_engine.open_json import CommandResult

TransactionHash = Annotated[str, Field(pattern=r"^0x[0-9a-f]{64}$")]
FINAL = ("confirmed", "failed", "expired")
# An attempt in flight holds its payment (it can be neither cancelled nor signed again until the attempt lands or
# expires), so a signer may not pin a payment with a transaction that can land for years.
MAX_ATTEMPT_TTL_MS = 60 * 60 * 1000
# How far the chain's clock, as a worker states it, may stand from the ledger's: wider than any clock a
# deployment keeps in sync, narrow enough that an observer's early "expired" frees nothing for long.
MAX_CHAIN_CLOCK_SKEW_MS = 15 * 60 * 1000


class SignedTransfer(Payload):
    """What the signed bytes say, and where they are kept."""

    payment_id: Identifier
    attempt_id: Identifier
    payout_address: ChainAddress
    amount: Amount
    sender_address: ChainAddress
    sender_sequence: Count
    signed_bytes_ref: Identifier
    signed_bytes_hash: Digest
    transaction_hash: TransactionHash
    expires_at_ms: TimestampMs


class ChainReading(Payload):
    """Where and when the chain was read, and the stored evidence of what it said."""

    ledger_version: Count
    chain_time_ms: TimestampMs
    evidence_digest: Digest


class RecordSignedAttemptPayload(SignedTransfer):
    claimed_by: Identifier  # the submitting worker, whose live claim on the payment's effect authorises this transfer
    chain_time_ms: TimestampMs | None = None  # the chain's time the expiry was set from, as the signer read it


class RecordTransferObservationPayload(ChainReading):
    payment_id: Identifier
    attempt_id: Identifier
    transaction_hash: TransactionHash
    outcome: Literal["submitted", "confirmed", "failed", "expired"]


class RecordLandedAttemptPayload(SignedTransfer, ChainReading):
    outcome: Literal["confirmed", "failed"]  # committed on chain: executed, or aborted
    signed_by: Identifier  # the signer whose journal holds the bytes: never the observer recording them


Observed = RecordTransferObservationPayload | RecordLandedAttemptPayload
ATTEMPT_FIELDS = frozenset(SignedTransfer.model_fields) - {"payout_address", "amount"}


def sender_sentinel(sender_address: str, sender_sequence: int) -> str:
    return key("sender", sender_address, seq20(sender_sequence))


def load_attempt(changes: Changes, attempt_id: str) -> PaymentAttempt:
    return load(changes, attempt_key(attempt_id), f"payment attempt {attempt_id}", PaymentAttempt)


@command("RecordSignedAttempt", payload=RecordSignedAttemptPayload, roles={"signer"}, cites_evidence=True)
def record_signed_attempt(ctx: RuleContext, p: RecordSignedAttemptPayload) -> CommandResult:
    changes = ctx.changes
    payment = payments.load_payment(changes, p.payment_id)
    require_no_pending_update(changes, payment["recipient_id"])
    _require_signable(payment)
    require_within_cap(changes, payment)
    require(p.claimed_by == ctx.actor_id, ErrorCode.CLAIM_HELD,
            f"{ctx.actor_id} records attempts under its own claim, not under {p.claimed_by}'s")
    outbox.require_live_claim(outbox.load_effect(changes, payment["effect_id"]), p.claimed_by, ctx.now_ms)
    _require_signed_terms(changes, payment, p)
    _require_evidence(ctx, p.signed_bytes_hash, "the signed bytes' hash")
    _require_may_land_a_while(ctx, p)
    _record_attempt(ctx, payment, p, claimed_by=p.claimed_by, signed_by=ctx.actor_id)
    require_payouts_unblocked(changes)
    return {"payment_id": p.payment_id, "attempt_id": p.attempt_id, "transaction_hash": p.transaction_hash}


@command("RecordLandedAttempt", payload=RecordLandedAttemptPayload, roles={"observer"}, cites_evidence=True)
def record_landed_attempt(ctx: RuleContext, p: RecordLandedAttemptPayload) -> CommandResult:
    """An attempt the chain committed but the ledger never recorded, with that observation (see the module)."""
    changes = ctx.changes
    outbox.require_worker_of(ctx, outbox.PAYMENT_TRANSFER, "a landed transfer")
    _require_signer(ctx, p.signed_by)
    payment = payments.load_payment(changes, p.payment_id)
    _require_signable(payment)
    _require_reconciled_claim(ctx, payment, p.signed_by)
    _require_signed_terms(changes, payment, p)
    _require_evidence(ctx, p.signed_bytes_hash, "the signed bytes' hash")
    _require_evidence(ctx, p.evidence_digest, "the observation's evidence digest")
    attempt = _record_attempt(ctx, payment, p, claimed_by=None, signed_by=p.signed_by)
    _observe(ctx, attempt, p)
    require_conserved(changes)
    return {"payment_id": p.payment_id, "attempt_id": p.attempt_id, "transaction_hash": p.transaction_hash,
            "outcome": p.outcome}


def _require_may_land_a_while(ctx: RuleContext, p: RecordSignedAttemptPayload) -> None:
    """Unexpired by the chain's clock (the ledger's when none is stated), landing for at most an hour more."""
    clock_ms = ctx.now_ms if p.chain_time_ms is None else require_chain_time_near(ctx, p.chain_time_ms)
    require(p.expires_at_ms > clock_ms, ErrorCode.EXPIRED,
            f"the signed transaction expired at {p.expires_at_ms}; the chain's time is {clock_ms}")
    require(p.expires_at_ms <= clock_ms + MAX_ATTEMPT_TTL_MS, ErrorCode.INVALID_TIME,
            f"a signed transaction may land for at most {MAX_ATTEMPT_TTL_MS} ms after it is recorded")


def require_chain_time_near(ctx: RuleContext, chain_time_ms: int) -> int:
    """A chain time a worker states, if it lies within ``MAX_CHAIN_CLOCK_SKEW_MS`` of the ledger's clock."""
    require(abs(chain_time_ms - ctx.now_ms) <= MAX_CHAIN_CLOCK_SKEW_MS, ErrorCode.INVALID_TIME,
            f"the chain's time {chain_time_ms} stands {chain_time_ms - ctx.now_ms} ms from the ledger's; "
            f"at most {MAX_CHAIN_CLOCK_SKEW_MS} ms is believed")
    return chain_time_ms


def _require_signable(payment: Payment) -> None:
    state, payment_id = payment["state"], payment["payment_id"]
    if state in payments.IN_FLIGHT:
        raise Rejected(ErrorCode.RECONCILIATION_REQUIRED,
                       f"payment {payment_id} is {state}: its last attempt must be observed before another is signed")
    require(state != "confirmed", ErrorCode.ALREADY_PAID, f"payment {payment_id} is already paid")
    require(state in ("approved", "failed"), ErrorCode.INVALID_STATE, f"payment {payment_id} is {state}")


def _require_signer(ctx: RuleContext, signed_by: str) -> None:
    """The named signer is another actor, one provisioned to sign (whether or not it still is)."""
    require_other_actor(ctx, signed_by, "signed this transfer", "observe")
    record = ctx.changes.get(STATE, actor_key(signed_by))
    require(record is not None and "signer" in record.data["roles"], ErrorCode.INVALID_REFERENCE,
            f"{signed_by} is not an actor provisioned to sign")


def _require_reconciled_claim(ctx: RuleContext, payment: Payment, signed_by: str) -> None:
    """What stands in for a live claim when committed history is recorded: nobody else is dispatching it."""
    effect = outbox.load_effect(ctx.changes, payment["effect_id"])
    require(effect["status"] in outbox.OPEN, ErrorCode.INVALID_STATE,
            f"effect {effect['effect_id']} of payment {payment['payment_id']} is {effect['status']}")
    if outbox.claim_is_live(effect, ctx.now_ms):
        holder = outbox.claim_of(effect)["worker_id"]
        require(holder == signed_by, ErrorCode.CLAIM_HELD,
                f"effect {effect['effect_id']} is claimed by {holder}, who records its own attempts")


def _require_signed_terms(changes: Changes, payment: Payment, p: SignedTransfer) -> None:
    """The payer's bytes pay exactly the frozen amount to the frozen address of a recipient unchanged since."""
    require_payer_sends(changes, p.sender_address)
    require((p.payout_address, p.amount) == (payment["payout_address"], payments.amount(payment)),
            ErrorCode.CONFLICTING_EVIDENCE,
            f"payment {payment['payment_id']} pays {payment['amount']} to {payment['payout_address']}")
    recipient = load_recipient(changes, payment["recipient_id"])
    require(recipient["version"] == payment["recipient_version"], ErrorCode.INVALID_STATE,
            f"recipient {payment['recipient_id']} changed after payment {payment['payment_id']} was frozen")


def _require_evidence(ctx: RuleContext, digest: str, what: str) -> None:
    require(digest in ctx.envelope.evidence_hashes, ErrorCode.INVALID_REFERENCE,
            f"{what} must be listed in the envelope's evidence_hashes")


def _record_attempt(ctx: RuleContext, payment: Payment, p: SignedTransfer,
                    claimed_by: str | None, signed_by: str) -> PaymentAttempt:
    """The attempt as the payment's next, pending, holding its sender sequence and transaction hash."""
    changes = ctx.changes
    require(changes.get(STATE, attempt_key(p.attempt_id)) is None, ErrorCode.ALREADY_EXISTS,
            f"payment attempt {p.attempt_id} already exists")
    owner = {"attempt_id": p.attempt_id, "payment_id": p.payment_id}
    changes.claim_unique(sender_sentinel(p.sender_address, p.sender_sequence), owner, ErrorCode.NONCE_REUSED,
                         f"sender {p.sender_address} already signed sequence {p.sender_sequence}")
    changes.claim_unique(key("transaction", p.transaction_hash), owner, ErrorCode.DUPLICATE_EVIDENCE,
                         f"transaction {p.transaction_hash} is already recorded")
    attempt = shaped({
        **p.model_dump(mode="json", include=set(ATTEMPT_FIELDS)),
        "claimed_by": claimed_by,
        "effect_id": payment["effect_id"],
        "number": len(payment["attempt_ids"]) + 1,
        "signed_by": signed_by,
        "signed_at_ms": ctx.now_ms,
        "reconciled": claimed_by is None,
        "outcome": "pending",
        "ledger_version": None,
        "observed_at_ms": None,
        "correlation_id": payment.get("correlation_id"),
        "created": created(ctx),
    }, PaymentAttempt)
    changes.put_state(attempt_key(p.attempt_id), attempt)
    payments.move(changes, payment, "signed", attempt_ids=[*payment["attempt_ids"], p.attempt_id])
    return attempt


@command("RecordTransferObservation", payload=RecordTransferObservationPayload, roles={"observer"}, cites_evidence=True)
def record_transfer_observation(ctx: RuleContext, p: RecordTransferObservationPayload) -> CommandResult:
    changes = ctx.changes
    outbox.require_worker_of(ctx, outbox.PAYMENT_TRANSFER, "a payment's chain observation")
    _require_evidence(ctx, p.evidence_digest, "the observation's evidence digest")
    attempt = load_attempt(changes, p.attempt_id)
    require_other_actor(ctx, attempt["signed_by"], f"signed attempt {p.attempt_id}", "observe")
    require(attempt["payment_id"] == p.payment_id, ErrorCode.INVALID_REFERENCE,
            f"attempt {p.attempt_id} belongs to payment {attempt['payment_id']}")
    require(attempt["transaction_hash"] == p.transaction_hash, ErrorCode.CONFLICTING_EVIDENCE,
            f"attempt {p.attempt_id} signed transaction {attempt['transaction_hash']}")
    require(p.evidence_digest != attempt["signed_bytes_hash"], ErrorCode.CONFLICTING_EVIDENCE,
            "the chain's evidence is not the signed bytes themselves")
    require(attempt["claimed_by"] is not None or attempt.get("reconciled"), ErrorCode.INVALID_STATE,
            f"attempt {p.attempt_id} was recorded under no claim")
    if p.outcome == "expired":  # the chain's clock decides, within the skew the ledger believes of it
        require(p.chain_time_ms >= attempt["expires_at_ms"], ErrorCode.INVALID_TIME,
                f"attempt {p.attempt_id} can land until {attempt['expires_at_ms']}; the chain read {p.chain_time_ms}")
        require(p.chain_time_ms <= ctx.now_ms + MAX_CHAIN_CLOCK_SKEW_MS, ErrorCode.INVALID_TIME,
                f"the chain's time {p.chain_time_ms} stands more than {MAX_CHAIN_CLOCK_SKEW_MS} ms ahead of the "
                "ledger's")
    if not _outcome_changes(attempt, p.outcome):
        return {"payment_id": p.payment_id, "attempt_id": p.attempt_id, "changed": False}
    _observe(ctx, attempt, p)
    require_conserved(changes)
    return {"payment_id": p.payment_id, "attempt_id": p.attempt_id, "changed": True}


def _outcome_changes(attempt: PaymentAttempt, outcome: str) -> bool:
    """Whether ``outcome`` is news for the attempt; a contradiction is rejected."""
    recorded = attempt["outcome"]
    if recorded not in FINAL:
        return outcome != recorded
    consistent = outcome == recorded or (outcome == "submitted" and recorded != "expired")
    require(consistent, ErrorCode.CONFLICTING_EVIDENCE,
            f"attempt {attempt['attempt_id']} was already observed {recorded}; now {outcome}")
    return False


def _observe(ctx: RuleContext, attempt: PaymentAttempt, p: Observed) -> None:
    """Record a new outcome of the attempt and move its payment accordingly."""
    changes = ctx.changes
    changes.put_state(attempt_key(p.attempt_id), {**attempt, "outcome": p.outcome, "ledger_version": p.ledger_version,
                                                  "observed_at_ms": ctx.now_ms})
    if p.outcome == "expired":  # never committed: the chain left its sequence unused
        changes.release_unique(sender_sentinel(attempt["sender_address"], attempt["sender_sequence"]))
    changes.event("TransferObserved", payment_id=p.payment_id, attempt_id=p.attempt_id,
                  transaction_hash=p.transaction_hash, outcome=p.outcome, ledger_version=p.ledger_version,
                  evidence_digest=p.evidence_digest)
    _apply_to_payment(ctx, payments.load_payment(changes, p.payment_id), attempt, p.outcome)


def _apply_to_payment(ctx: RuleContext, payment: Payment, attempt: PaymentAttempt, outcome: str) -> None:
    """The attempt is the payment's unresolved one (only one ever is), so its news moves the payment.

    A failed payment is unsigned again: held while its recipient's update is
    pending, moved to the recipient's new address if it changed meanwhile.
    """
    changes, effect_id = ctx.changes, payment["effect_id"]
    if outcome == "submitted":
        if payment["state"] != "submitted":
            payments.move(changes, payment, "submitted")
        outbox.finish(changes, effect_id, {"observed": "submitted", "attempt_id": attempt["attempt_id"]})
    elif outcome == "confirmed":
        payments.settle(changes, payment)
        payments.move(changes, payment, "confirmed", paid_attempt_id=attempt["attempt_id"])
        outbox.finish(changes, effect_id, {"observed": "confirmed", "attempt_id": attempt["attempt_id"]})
    else:
        failed = payments.move(changes, payment, "failed")
        outbox.reopen(changes, effect_id, {"observed": outcome, "attempt_id": attempt["attempt_id"]})
        place_unsigned(ctx, failed)


def complete_transfer(ctx: RuleContext, effect: Effect, outcome: str, transaction_hash: str | None) -> CommandResult:
    """The dispatcher's report on broadcasting the payment's current attempt."""
    changes = ctx.changes
    payment = payments.load_payment(changes, effect["payload"]["payment_id"])
    require(payment["state"] in payments.IN_FLIGHT, ErrorCode.INVALID_STATE,
            f"payment {payment['payment_id']} is {payment['state']}: there is no signed attempt to report on")
    require(outcome != "failed", ErrorCode.INVALID_STATE,
            "only a chain observation proves that a signed attempt cannot succeed")
    attempt = load_attempt(changes, payment["attempt_ids"][-1])
    require(transaction_hash == attempt["transaction_hash"], ErrorCode.CONFLICTING_EVIDENCE,
            f"the current attempt of payment {payment['payment_id']} is transaction {attempt['transaction_hash']}")
    target = "submitted" if outcome == "submitted" else "uncertain"
    if payments.MACHINE.allows(payment["state"], target):  # a report older than an observation changes nothing
        payments.move(changes, payment, target)
    result = {"outcome": outcome, "attempt_id": attempt["attempt_id"], "transaction_hash": transaction_hash}
    outbox.finish(changes, effect["effect_id"], result)
    return result
