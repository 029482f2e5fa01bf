"""A payout world: allocated payable lines (through AllocateListenerDay), workers, and every payout command.

It builds on the allocation tests' ``MoneyWorld``: real funding, budgets and
allocation, with only the streaming records (periods, closed listener-days)
made by that world's test-only fixture command. Payout commands run on this
world's own admission clock, so tests can let claims and attempts expire.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

import orjson

from ledger_engine.application.transition import CommandOutcome
from ledger_engine.domain.commands.money.attempts import attempt_key
from ledger_engine.domain.commands.money.payout_runs import frozen_run, run_hash, run_key
from ledger_engine.domain.commands.money.payments import payment_key
from ledger_engine.layout import INDEXES, OUTBOX, STATE
from tests.money_allocation.world import ARTISTS, FINANCE, FINANCE_2, FIRST_DAY, OPERATORS, MoneyWorld
from tests.support import payloads
from tests.support.store import changed_keys, owner_dump, rejection_footprint

DISPATCHER, DISPATCHER_2, SIGNER, OBSERVER, COMMITTER = "dispatcher-1", "dispatcher-2", "signer-1", "observer-1", "committer-1"
WATCHER = "watcher-1"  # the payment worker's second credential: it records what the chain did with the payments
RECONCILER = "reconciler-1"  # an observer of payments after a restore (tests/effects runs one)
PAYMENT_WORKER = ["dispatcher", "signer"]  # claims and signs under its own claim
PAYMENT_OBSERVER = ["dispatcher", "observer"]  # observes the payments others signed (docs/adr/0090)
# SIGNER and OBSERVER hold one role each: a signer without a claim of its own, an observer that works no effects.
WORKERS = {DISPATCHER: PAYMENT_WORKER, DISPATCHER_2: PAYMENT_WORKER, SIGNER: ["signer"], OBSERVER: ["observer"],
           COMMITTER: ["committer", "observer"], WATCHER: PAYMENT_OBSERVER, RECONCILER: PAYMENT_OBSERVER}
RECIPIENTS = ARTISTS + OPERATORS
LISTENER = "listener-1"
SENDER = payloads.address("porto-treasury")
WORKS = {"work-1": 60_000, "work-2": 30_000, "work-3": 10_000}
NODES = {"node-1": ("operator-x", 700), "node-2": ("operator-y", 300)}
PAYMENT, EFFECT = "run-1.artist-a", "run-1.artist-a.effect"  # the conftest's approved run's first payment
CLAIM_MS = 60_000
WINDOW_END_MS = 4_000_000_000_000  # batches here cover every allocated day
SIGNED_TTL_MS = 120_000
digest = payloads.digest


def transaction_hash(*parts: object) -> str:
    return "0x" + digest("transaction", *parts)


class PayoutWorld:
    def __init__(self, money: MoneyWorld) -> None:
        self.money = money
        self.owner = money.owner
        self.clock = money.envelopes  # one admission clock for every envelope this ledger sees
        self.sender_sequence = itertools.count()
        self.batch_numbers = itertools.count(1)

    # Setup: workers, and payable lines for every artist and operator.
    def setup(self, *, days: int = 2) -> "PayoutWorld":
        for worker, roles in WORKERS.items():
            assert self.owner.submit(self.money.envelopes.account(worker, "worker", roles)).accepted
        self.money.period("period-1", LISTENER, days=30)
        assert self.money.lot("lot-1", 5_000_000).accepted
        self.money.fund("budget-1", "period-1", {"lot-1": 3_000_000})
        for day in range(FIRST_DAY, FIRST_DAY + days):
            self.money.closed_day(LISTENER, day, "period-1", WORKS, NODES)
            assert self.money.allocate(LISTENER, day, "budget-1").accepted
        return self

    # Submitting on this world's clock.
    @property
    def now_ms(self) -> int:
        """The admission time of the last envelope; setting it lets time pass, never run back."""
        self.money.follow_the_ledger_clock()
        return self.clock.clock_ms

    @now_ms.setter
    def now_ms(self, timestamp_ms: int) -> None:
        assert timestamp_ms >= self.now_ms, "admission time never runs back"
        self.clock.advance_to(timestamp_ms)

    def submit(self, command_type: str, payload: dict[str, Any], *, actor: str,
               expected: list[dict[str, Any]] = (), evidence: list[str] = (), step_up: bool = False) -> CommandOutcome:
        return self.money.submit(command_type, payload, actor=actor, expected=expected, evidence=evidence,
                                 step_up=step_up)

    def rejects(self, code: str, submit: Callable[[], CommandOutcome]) -> CommandOutcome:
        """``submit`` is journalled as a rejection with ``code`` and changes nothing else."""
        before = owner_dump(self.owner)
        outcome = submit()
        assert (outcome.outcome, outcome.code) == ("rejected", code), outcome.result
        assert changed_keys(before, owner_dump(self.owner)) <= rejection_footprint(outcome.command_id, outcome.sequence)
        return outcome

    def state(self, record_key: str) -> dict[str, Any] | None:
        return self.money.state(record_key)

    def index(self, index_key: str) -> dict[str, Any] | None:
        raw = self.owner.store.get(INDEXES, index_key.encode())
        return orjson.loads(raw) if raw is not None else None

    def revision(self, family: str, record_key: str) -> dict[str, Any]:
        record = self.owner.get(family, record_key)
        return {"cf": family, "key": record_key, "revision": record.revision if record else None}

    def payable_line_ids(self, recipient_id: str) -> list[str]:
        return sorted(data["data"]["line_id"] for _, data in self.owner.scan(STATE, "allocation_line/", limit=10_000)
                      if (data["data"]["recipient_id"], data["data"]["status"]) == (recipient_id, "payable"))

    # Batches and statements.
    def batch(self, batch_id: str, kind: str, *, parent: str | None = None, statements: list[dict] = (),
              actor: str = FINANCE, window_end_ms: int = WINDOW_END_MS) -> str:
        """Prepare and freeze a batch; returns its anchor effect ID."""
        prepare = {"action": "prepare", "kind": kind, "window_start_ms": 0, "window_end_ms": window_end_ms,
                   "parent_batch_id": parent}
        assert self.submit("FreezeArtifact", {"batch_id": batch_id, "step": prepare}, actor=actor).accepted
        anchor = f"{batch_id}-anchor"
        outcome = self.freeze(batch_id, anchor, statements=statements, actor=actor)
        assert outcome.accepted, outcome.result
        return anchor

    def freeze(self, batch_id: str, anchor: str, *, statements: list[dict] = (), actor: str = FINANCE,
               artifact: str | None = None) -> CommandOutcome:
        artifact_hash = digest("artifact", artifact or batch_id)
        step = {"action": "freeze", "artifact_ref": f"{batch_id}-bytes", "artifact_hash": artifact_hash,
                "count": len(statements), "anchor_effect_id": anchor, "statements": list(statements)}
        return self.submit("FreezeArtifact", {"batch_id": batch_id, "step": step}, actor=actor,
                           evidence=[artifact_hash])

    def anchor(self, batch_id: str, anchor: str) -> None:
        """Anchor a frozen batch and observe the commitment confirmed."""
        assert self.claim(anchor, actor=COMMITTER).accepted
        tx = transaction_hash("commitment", batch_id)
        assert self.complete(anchor, "submitted", tx, actor=COMMITTER).accepted
        assert self.observe_commitment(batch_id, tx, "confirmed").accepted

    def observe_commitment(self, batch_id: str, tx: str, outcome: str, *, artifact: str | None = None,
                           journal_tree: dict[str, Any] | None = None) -> CommandOutcome:
        evidence = digest("commitment-evidence", batch_id, tx, outcome)
        tree = {"journal_tree": journal_tree} if journal_tree is not None else {}
        return self.submit("RecordCommitmentObservation", {
            "batch_id": batch_id, "transaction_hash": tx, "artifact_hash": digest("artifact", artifact or batch_id),
            "outcome": outcome, "ledger_version": 1_000, "evidence_digest": evidence, **tree}, actor=COMMITTER,
            evidence=[evidence])

    def confirmed_statements(self, recipients: list[str] | tuple[str, ...] = RECIPIENTS, *,
                             confirm: bool = True, window_end_ms: int = WINDOW_END_MS) -> list[str]:
        """An allocation batch and a statement index for ``recipients``, both anchored; the statement IDs."""
        number = next(self.batch_numbers)
        accounting = f"allocation-batch-{number}"
        self.anchor(accounting, self.batch(accounting, "allocation", window_end_ms=window_end_ms))
        statements = [{"statement_id": f"statement-{number}-{recipient}", "recipient_id": recipient,
                       "accounting_batch_id": accounting, "artifact_hash": digest("statement", number, recipient),
                       "public_proof_id": digest("proof", number, recipient)[:32]}
                      for recipient in sorted(recipients)]
        index = f"statement-index-{number}"
        anchor = self.batch(index, "statement_index", statements=statements)
        if confirm:
            self.anchor(index, anchor)
        return [statement["statement_id"] for statement in statements]

    # Payout runs.
    def run_payload(self, run_id: str, plan: dict[str, list[str]]) -> dict[str, Any]:
        """A PreparePayoutRun payload paying each recipient in ``plan`` its listed lines, with the right hash.

        Unknown recipients and lines get stand-ins, so tests can watch them rejected.
        """
        payments, addresses = [], []
        for recipient_id, line_ids in sorted(plan.items()):
            recipient = self.state(f"recipient/{recipient_id}") or {"version": 1, "payout_address": SENDER}
            amount = sum(int((self.state(f"allocation_line/{line_id}") or {"amount": "1"})["amount"])
                         for line_id in line_ids)
            payments.append({"payment_id": f"{run_id}.{recipient_id}", "effect_id": f"{run_id}.{recipient_id}.effect",
                             "recipient_id": recipient_id, "recipient_version": recipient["version"],
                             "amount": str(amount), "line_ids": sorted(line_ids)})
            addresses.append(recipient["payout_address"])
        frozen = frozen_run(run_id, "USDC", [{**payment, "payout_address": address}
                                             for payment, address in zip(payments, addresses)])
        return {"run_id": run_id, "asset": "USDC", "payments": payments, "run_hash": run_hash(frozen)}

    def prepare(self, run_id: str, plan: dict[str, list[str]] | None = None, *, actor: str = FINANCE,
                **overrides: Any) -> CommandOutcome:
        plan = plan if plan is not None else {recipient: self.payable_line_ids(recipient) for recipient in RECIPIENTS}
        return self.submit("PreparePayoutRun", {**self.run_payload(run_id, plan), **overrides}, actor=actor)

    def approve(self, run_id: str, statement_ids: list[str], *, actor: str = FINANCE_2,
                stated_hash: str | None = None, step_up: bool = True) -> CommandOutcome:
        stated = stated_hash or self.state(run_key(run_id))["run_hash"]
        return self.submit("ApprovePayoutRun", {"run_id": run_id, "run_hash": stated,
                                                "statement_ids": sorted(statement_ids)}, actor=actor, step_up=step_up)

    def cancel(self, run_id: str, reason: str = "prepared_in_error", *, actor: str = FINANCE) -> CommandOutcome:
        return self.submit("CancelPayoutRun", {"run_id": run_id, "reason": reason}, actor=actor,
                           expected=[self.revision(STATE, run_key(run_id))])

    # Effects and attempts.
    def claim(self, effect_id: str, *, actor: str = DISPATCHER, lease_ms: int = CLAIM_MS) -> CommandOutcome:
        return self.submit("ClaimEffect", {"effect_id": effect_id, "expires_at_ms": self.now_ms + 1_000 + lease_ms},
                           actor=actor, expected=[self.revision(OUTBOX, effect_id)])

    def complete(self, effect_id: str, outcome: str, tx: str | None = None, *, actor: str = DISPATCHER) -> CommandOutcome:
        return self.submit("CompleteEffect", {"effect_id": effect_id, "outcome": outcome, "transaction_hash": tx},
                           actor=actor, expected=[self.revision(OUTBOX, effect_id)])

    def attempt_payload(self, payment_id: str, attempt_id: str, *, claimed_by: str = DISPATCHER,
                        sequence: int | None = None, ttl_ms: int = SIGNED_TTL_MS, **overrides: Any) -> dict[str, Any]:
        payment = self.state(payment_key(payment_id))
        return {
            "payment_id": payment_id, "attempt_id": attempt_id, "claimed_by": claimed_by,
            "payout_address": payment["payout_address"], "amount": payment["amount"],
            "sender_address": SENDER, "sender_sequence": next(self.sender_sequence) if sequence is None else sequence,
            "signed_bytes_ref": f"{attempt_id}-bytes", "signed_bytes_hash": digest("signed", attempt_id),
            "transaction_hash": transaction_hash(attempt_id), "expires_at_ms": self.now_ms + 1_000 + ttl_ms,
            **overrides,
        }

    def sign(self, payment_id: str, attempt_id: str, *, actor: str | None = None, **options: Any) -> CommandOutcome:
        """RecordSignedAttempt, by the worker the attempt names as holding the claim unless ``actor`` says."""
        payload = self.attempt_payload(payment_id, attempt_id, **options)
        return self.submit("RecordSignedAttempt", payload, actor=actor or payload["claimed_by"],
                           evidence=[payload["signed_bytes_hash"]])

    def observe(self, attempt_id: str, outcome: str, *, chain_time_ms: int | None = None,
                actor: str = WATCHER) -> CommandOutcome:
        attempt = self.state(attempt_key(attempt_id))
        chain_time = attempt["expires_at_ms"] if chain_time_ms is None else chain_time_ms
        if outcome == "expired":  # seen once the chain's clock, and so the ledger's, has passed the expiry
            self.clock.advance_to(chain_time)
        reading = self.chain_reading(attempt_id, outcome, chain_time)
        return self.submit("RecordTransferObservation", {
            "payment_id": attempt["payment_id"], "attempt_id": attempt_id, "transaction_hash": attempt["transaction_hash"],
            "outcome": outcome, **reading}, actor=actor, evidence=[reading["evidence_digest"]])

    def land(self, payment_id: str, attempt_id: str, outcome: str = "confirmed", *, actor: str = RECONCILER,
             signed_by: str = DISPATCHER, **options: Any) -> CommandOutcome:
        """Reconciliation: a transfer the chain committed and the ledger never recorded, read after its expiry,
        signed by ``signed_by`` and recorded by the observer ``actor``."""
        signed = self.attempt_payload(payment_id, attempt_id, ttl_ms=-SIGNED_TTL_MS, **options)
        del signed["claimed_by"]
        reading = self.chain_reading(attempt_id, outcome, self.now_ms)
        return self.submit("RecordLandedAttempt", {**signed, "outcome": outcome, **reading, "signed_by": signed_by},
                           actor=actor,
                           evidence=[signed["signed_bytes_hash"], reading["evidence_digest"]])

    @staticmethod
    def chain_reading(attempt_id: str, outcome: str, chain_time_ms: int) -> dict[str, Any]:
        evidence = digest("transfer-evidence", attempt_id, outcome)
        return {"ledger_version": 5_000, "chain_time_ms": chain_time_ms, "evidence_digest": evidence}

    def leave_in_flight(self, run_id: str, recipient_id: str, attempt_id: str) -> int:
        """A run paying ``recipient_id`` alone, approved, claimed and signed, then left: its attempt's expiry."""
        plan = {recipient_id: self.payable_line_ids(recipient_id)}
        payment_id = f"{run_id}.{recipient_id}"
        assert self.prepare(run_id, plan).accepted
        assert self.approve(run_id, self.confirmed_statements(plan)).accepted
        assert self.claim(f"{payment_id}.effect").accepted
        assert self.sign(payment_id, attempt_id).accepted
        return self.state(attempt_key(attempt_id))["expires_at_ms"]

    def pay(self, payment_id: str, attempt_id: str) -> None:
        """The happy path of one approved payment: claim, sign, broadcast, confirm."""
        effect_id = self.state(payment_key(payment_id))["effect_id"]
        assert self.claim(effect_id).accepted
        assert self.sign(payment_id, attempt_id).accepted
        assert self.complete(effect_id, "submitted", transaction_hash(attempt_id)).accepted
        assert self.observe(attempt_id, "confirmed").accepted
