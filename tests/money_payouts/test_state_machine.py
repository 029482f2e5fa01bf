"""Random interleavings of prepare, approve, cancel, claim, sign, broadcast, observe and reconcile: paid once, balanced.

Observations arrive confirmed, failed, expired or submitted, duplicated and
out of order; claims lapse; recipients change address mid-run; attempts
reuse earlier sender sequences; landed transfers the ledger never recorded
are reconciled. After every step the lines, payments, attempts, budgets and
postings must agree (``payout_problems``), no payment is paid twice, nothing
paid is ever unpaid, and a sender sequence is held by exactly the one attempt
the chain may still use it for.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.domain.commands.money.payments import PAID_EVENT
from ledger_engine.layout import EVENTS, OUTBOX, UNIQUE
from tests.conftest import EnvelopeFactory
from tests.money_allocation.oracle import records
from tests.money_allocation.world import FINANCE, FINANCE_2, MoneyWorld, fixture_commands
from tests.money_payouts.oracle import payout_problems
from tests.money_payouts.world import (
    DISPATCHER, DISPATCHER_2, RECIPIENTS, PayoutWorld, digest, transaction_hash,
)
from tests.support import payloads, step_up
from tests.support.tiers import examples

# Codes a well-formed command may meet in a random history; anything else is a bug.
EXPECTED_REJECTIONS = {
    "INVALID_STATE", "ALREADY_RESERVED", "ALREADY_PAID", "CLAIM_HELD", "CLAIM_EXPIRED", "RECONCILIATION_REQUIRED",
    "CONFLICTING_EVIDENCE", "FOUR_EYES_REQUIRED", "NONCE_REUSED", "STALE_REVISION",
}
FINANCE_ACTORS = (FINANCE, FINANCE_2)


class PayoutMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="porto-payout-machine-"))
        self.fixtures = fixture_commands()
        self.fixtures.__enter__()
        self.owner = LedgerOwner.open(self.directory / "ledger", genesis=step_up.genesis())
        self.world = PayoutWorld(MoneyWorld(self.owner, EnvelopeFactory()).setup()).setup(days=3)
        self.statements = dict(zip(sorted(RECIPIENTS), self.world.confirmed_statements()))
        self.lines = {recipient: self.world.payable_line_ids(recipient) for recipient in RECIPIENTS}
        self.runs: list[str] = []
        self.payments: list[str] = []
        self.attempts: list[str] = []
        self.confirmed: set[str] = set()
        self.updates = 0
        self.prepare(set(RECIPIENTS), mask=0b000111, preparer=FINANCE)  # the first day's lines, approved
        self.approve(run=0, four_eyes=1)

    def teardown(self) -> None:
        self.owner.close()
        self.fixtures.__exit__(None, None, None)
        shutil.rmtree(self.directory, ignore_errors=True)

    def expect(self, outcome) -> None:
        assert outcome.accepted or outcome.code in EXPECTED_REJECTIONS, outcome.result

    def pick(self, index: int, states: tuple[str, ...], effect_status: str) -> dict | None:
        """Mostly a payment in one of ``states`` with its effect ``effect_status``, so histories get somewhere;
        one time in ten any payment at all."""
        payments = [self.world.state(f"payment/{payment_id}") for payment_id in self.payments]
        if index % 10:
            payments = [payment for payment in payments
                        if payment["state"] in states and self.effect_status(payment) == effect_status]
        return payments[index % len(payments)] if payments else None

    def effect_status(self, payment: dict) -> str | None:
        effect = self.owner.get(OUTBOX, payment["effect_id"])
        return effect.data["status"] if effect else None

    def holder(self, payment: dict, fallback: str) -> str:
        effect = self.owner.get(OUTBOX, payment["effect_id"])
        claim = effect.data["claim"] if effect else None
        return claim["worker_id"] if claim else fallback

    @rule(recipients=st.sets(st.sampled_from(RECIPIENTS), min_size=1, max_size=3), mask=st.integers(1, 2**6 - 1),
          preparer=st.sampled_from(FINANCE_ACTORS))
    def prepare(self, recipients, mask, preparer):
        plan = {}
        for recipient in recipients:
            lines = [line for bit, line in enumerate(self.lines[recipient]) if mask >> (bit % 6) & 1]
            plan[recipient] = lines or self.lines[recipient][:1]
        run_id = f"run-{len(self.runs)}"
        outcome = self.world.prepare(run_id, plan, actor=preparer)
        self.expect(outcome)
        if outcome.accepted:
            self.runs.append(run_id)
            self.payments += [f"{run_id}.{recipient}" for recipient in sorted(plan)]

    def pick_run(self, index: int, statuses: tuple[str, ...]) -> dict | None:
        """Mostly a run in one of ``statuses``; one time in ten any run at all."""
        runs = [self.world.state(f"payment_run/{run_id}") for run_id in self.runs]
        if index % 10:
            runs = [run for run in runs if run["status"] in statuses]
        return runs[index % len(runs)] if runs else None

    @precondition(lambda self: self.runs)
    @rule(run=st.integers(0, 100), four_eyes=st.integers(0, 9))
    def approve(self, run, four_eyes):
        record = self.pick_run(run, ("prepared",))
        if record is None:
            return
        run_id = record["run_id"]
        preparer = record["prepared_by"]
        approver = preparer if four_eyes == 0 else next(a for a in FINANCE_ACTORS if a != preparer)
        recipients = [p["recipient_id"] for p in record["frozen"]["payments"]]
        self.expect(self.world.approve(run_id, [self.statements[r] for r in recipients], actor=approver))

    @precondition(lambda self: self.runs)
    @rule(run=st.integers(0, 100), rarely=st.integers(0, 3))
    def cancel(self, run, rarely):
        record = self.pick_run(run, ("prepared", "approved"))
        if record and not rarely:
            self.expect(self.world.cancel(record["run_id"]))

    @precondition(lambda self: self.payments)
    @rule(payment=st.integers(0, 1000), worker=st.sampled_from([DISPATCHER, DISPATCHER_2]),
          lease_ms=st.integers(10_000, 120_000))
    def claim(self, payment, worker, lease_ms):
        payment = self.pick(payment, ("approved", "failed", "signed", "held"), "pending")
        if payment and self.effect_status(payment):
            self.expect(self.world.claim(payment["effect_id"], actor=worker, lease_ms=lease_ms))

    @precondition(lambda self: self.payments)
    @rule(payment=st.integers(0, 1000), stranger=st.integers(0, 9), reuse_sequence=st.integers(0, 100))
    def sign(self, payment, stranger, reuse_sequence):
        payment = self.pick(payment, ("approved", "failed", "signed"), "claimed")
        if payment is None:
            return
        claimed_by = self.holder(payment, DISPATCHER) if stranger else DISPATCHER_2
        attempt_id = f"attempt-{len(self.attempts)}"
        outcome = self.world.sign(payment["payment_id"], attempt_id, claimed_by=claimed_by,
                                  sequence=self.earlier_sequence(reuse_sequence))
        self.expect(outcome)
        if outcome.accepted:
            self.attempts.append(attempt_id)

    def earlier_sequence(self, index: int) -> int | None:
        """A fresh sender sequence, an earlier attempt's whatever became of it, or an expired attempt's."""
        attempts = [self.world.state(f"payment_attempt/{attempt_id}") for attempt_id in self.attempts]
        if index % 3 == 2:
            attempts = [attempt for attempt in attempts if attempt["outcome"] == "expired"]
        if index % 3 == 0 or not attempts:
            return None
        return attempts[index // 3 % len(attempts)]["sender_sequence"]

    @precondition(lambda self: self.payments)
    @rule(payment=st.integers(0, 1000), outcome=st.sampled_from(["confirmed", "failed"]),
          reuse_sequence=st.integers(0, 100))
    def land(self, payment, outcome, reuse_sequence):
        """Reconcile a transfer the chain committed that the ledger never heard of."""
        payment = self.pick(payment, ("approved", "failed"), "pending")
        if payment is None:
            return
        attempt_id = f"attempt-{len(self.attempts)}"
        landed = self.world.land(payment["payment_id"], attempt_id, outcome,
                                 sequence=self.earlier_sequence(reuse_sequence))
        self.expect(landed)
        if landed.accepted:
            self.attempts.append(attempt_id)

    @precondition(lambda self: self.payments)
    @rule(payment=st.integers(0, 1000), outcome=st.sampled_from(["submitted", "unknown", "released"]))
    def complete(self, payment, outcome):
        payment = self.pick(payment, ("signed",), "claimed")
        if payment is None or self.effect_status(payment) is None:
            return
        tx = transaction_hash(payment["attempt_ids"][-1]) if payment["attempt_ids"] else None
        if tx is None and outcome != "released":
            return
        self.expect(self.world.complete(payment["effect_id"], outcome, None if outcome == "released" else tx,
                                        actor=self.holder(payment, DISPATCHER)))

    @precondition(lambda self: self.attempts)
    @rule(attempt=st.integers(0, 100), outcome=st.sampled_from(["submitted", "confirmed", "failed", "expired"]))
    def observe(self, attempt, outcome):
        """Mostly an attempt the chain has not settled yet; one time in ten any attempt at all."""
        unsettled = [attempt_id for attempt_id in self.attempts
                     if self.world.state(f"payment_attempt/{attempt_id}")["outcome"] in ("pending", "submitted")]
        attempts = unsettled if attempt % 10 and unsettled else self.attempts
        self.expect(self.world.observe(attempts[attempt % len(attempts)], outcome))

    @rule(milliseconds=st.integers(1, 90_000))
    def time_passes(self, milliseconds):
        self.world.now_ms += milliseconds

    @rule(approve=st.booleans(), actor=st.sampled_from(FINANCE_ACTORS))
    def change_address(self, approve, actor):
        """Request a new address for artist-a, or decide the pending request."""
        recipient = self.world.state("recipient/artist-a")
        pending = self.world.state(f"recipient_update/artist-a/update-{self.updates}")
        evidence = digest("ownership", self.updates + 1)
        step = {"action": "request", "version": recipient["version"] + 1, "evidence_digest": evidence,
                "payout_address": payloads.address(f"artist-a-{self.updates + 1}")}
        if pending and pending["status"] == "pending":
            step = {"action": "approve", "version": pending["version"], "payout_address": pending["payout_address"]} \
                if approve else {"action": "decline", "reason": "requested_in_error"}
        else:
            self.updates += 1
        self.expect(self.world.submit("UpdateRecipient", {
            "update_id": f"update-{self.updates}", "recipient_id": "artist-a", "step": step}, actor=actor,
            evidence=[evidence] if step["action"] == "request" else [], step_up=step["action"] == "approve"))

    @invariant()
    def lines_payments_budgets_and_postings_agree(self):
        assert payout_problems(self.owner) == []

    @invariant()
    def a_sender_sequence_is_held_while_the_chain_may_use_it(self):
        """Every attempt not proven expired holds its sequence alone; an expired one holds nothing."""
        holders = defaultdict(list)
        for attempt in records(self.owner, "payment_attempt/"):
            sentinel = f"sender/{attempt['sender_address']}/{attempt['sender_sequence']:020d}"
            holders[sentinel] += [] if attempt["outcome"] == "expired" else [attempt]
        for sentinel, attempts in sorted(holders.items()):
            assert len(attempts) <= 1, attempts
            owner = self.owner.get(UNIQUE, sentinel)
            expected = [{"attempt_id": a["attempt_id"], "payment_id": a["payment_id"]} for a in attempts]
            assert ([owner.data] if owner else []) == expected, (sentinel, owner)

    @invariant()
    def paid_once_and_for_good(self):
        paid = Counter(event["payment_id"] for _, event in self.owner.scan(EVENTS, limit=10**6)
                       if event["type"] == PAID_EVENT)
        assert all(count == 1 for count in paid.values()), paid
        assert self.confirmed <= set(paid)
        self.confirmed = set(paid)
        for payment_id in self.confirmed:
            assert self.world.state(f"payment/{payment_id}")["state"] == "confirmed"


PayoutMachine.TestCase.settings = settings(
    max_examples=examples(50), stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TestPayoutInterleavings = PayoutMachine.TestCase
