"""Random histories of deposits, funding, refunds, corrections and recipient updates among the payout commands.

The payout machine's rules (prepare, approve, cancel, claim, sign, broadcast,
observe, reconcile, address changes) interleave with:

- deposits imported in equivalent spellings of one transaction hash (case,
  ``0x``), on chains inside and outside the closed set, with the output index
  as an integer or as text, and with evidence already used;
- additions to a budget, allocation of more listener-days of two periods,
  the provider refunding the second period;
- corrections requested by one finance actor and approved or declined by
  another (or, refused, by the same one), reversing payable lines and
  replacing them by the rights version's own split, or releasing or refunding
  the rest (a refunded budget takes nothing back: releasing into it is refused,
  at request and at approval).

After every step, besides the payout machine's invariants (lines, payments,
attempts, budgets and postings tell one story through ``payout_problems``,
which includes the full conservation check; paid once and for good; one
holder per sender sequence): one lot per deposit whatever its spelling,
nothing signed to a recipient while its address change was pending, nothing
allocated to a refunded period after its refund, and a correction posted at
most once.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule, invariant

from ledger_engine.errors import LedgerError
from ledger_engine.layout import EVENTS
from tests.money_allocation.oracle import largest_remainder_oracle, records
from tests.money_allocation.world import FINANCE, FINANCE_2, FIRST_DAY, INGEST, RIGHTS
from tests.money_payouts.test_state_machine import FINANCE_ACTORS, PayoutMachine
from tests.money_payouts.world import LISTENER, NODES, RECIPIENTS, digest
from tests.support.tiers import examples

CHAINS = ["simulated", "aptos", "Simulated", "SIMULATED", "aptos-mainnet"]  # the last three are not chains we know
KNOWN_CHAINS = {"simulated", "aptos"}
SPELLINGS = [lambda h: h, lambda h: "0x" + h, lambda h: h.upper(), lambda h: "0x" + h.upper(),
             lambda h: h[:20].upper() + h[20:]]
SECOND_LISTENER, SECOND_PERIOD, SECOND_BUDGET = "listener-2", "period-2", "budget-2"
# Codes a well-formed command may meet here, beyond the payout machine's.
MORE_REJECTIONS = {"INSUFFICIENT_FUNDS", "ALREADY_ALLOCATED", "DUPLICATE_EVIDENCE", "INVALID_REFERENCE"}


class MoneyRulesMachine(PayoutMachine):
    def __init__(self) -> None:
        super().__init__()
        self.money = self.world.money
        self.money.period(SECOND_PERIOD, SECOND_LISTENER, days=30)
        self.money.fund(SECOND_BUDGET, SECOND_PERIOD, {"lot-1": 1_500_000})
        self.days = {"period-1": FIRST_DAY + 3, SECOND_PERIOD: FIRST_DAY}
        self.units: dict[tuple[str, int], str] = {}  # canonical deposit -> its lot
        self.evidence: set[str] = set()
        self.lots = ["lot-1"]
        self.funding_version = 1
        self.refunded_at: int | None = None  # the sequence the second period was refunded at
        self.corrections = 0

    def expect(self, outcome) -> None:
        assert outcome.accepted or outcome.code in self.expected_codes(), outcome.result

    @staticmethod
    def expected_codes() -> set[str]:
        from tests.money_payouts.test_state_machine import EXPECTED_REJECTIONS
        return EXPECTED_REJECTIONS | MORE_REJECTIONS

    # Deposits, in equivalent spellings.
    @rule(deposit=st.integers(0, 5), chain=st.sampled_from(CHAINS), spelling=st.sampled_from(SPELLINGS),
          index=st.integers(0, 2), index_as_text=st.integers(0, 9), reuse=st.integers(0, 9),
          amount=st.integers(1, 10**6))
    def import_deposit(self, deposit, chain, spelling, index, index_as_text, reuse, amount):
        canonical = digest("deposit", deposit)
        unit = (canonical, index)  # the chain label names nothing: one transaction is one deposit
        evidence = sorted(self.evidence)[reuse % len(self.evidence)] if reuse == 0 and self.evidence else \
            digest("deposit-evidence", chain, canonical, index)
        lot_id = f"deposit-lot-{len(self.lots)}"
        payload = {"lot_id": lot_id, "asset": "USDC", "amount": str(amount), "deposit": {
            "chain": chain, "transaction_hash": spelling(canonical),
            "event_index": str(index) if index_as_text == 0 else index, "evidence_digest": evidence}}
        if chain not in KNOWN_CHAINS or index_as_text == 0:
            with pytest.raises(LedgerError) as refused:
                self.money.submit("ImportFunding", payload, actor=INGEST, evidence=[evidence])
            assert refused.value.code == "INVALID_PAYLOAD"
            return
        outcome = self.money.submit("ImportFunding", payload, actor=INGEST, evidence=[evidence])
        if unit in self.units or evidence in self.evidence:
            assert outcome.code == "DUPLICATE_EVIDENCE", outcome.result
            return
        assert outcome.accepted, outcome.result
        self.units[unit], self.lots = lot_id, [*self.lots, lot_id]
        self.evidence.add(evidence)

    @rule(lot=st.integers(0, 100), amount=st.integers(1, 10**6))
    def add_to_the_first_budget(self, lot, amount):
        version = self.funding_version + 1
        outcome = self.money.fund("budget-1", "period-1", {self.lots[lot % len(self.lots)]: amount},
                                  version=version, actor=FINANCE)
        self.expect(outcome)
        if outcome.accepted:
            self.funding_version = version

    # Allocation and the refund of the second period.
    @precondition(lambda self: self.days[SECOND_PERIOD] < FIRST_DAY + 30 and self.days["period-1"] < FIRST_DAY + 30)
    @rule(second=st.booleans(), listened=st.dictionaries(st.sampled_from(sorted(RIGHTS)), st.integers(1, 10**6),
                                                         min_size=1))
    def allocate_a_day(self, second, listened):
        period, listener, budget = (SECOND_PERIOD, SECOND_LISTENER, SECOND_BUDGET) if second else \
            ("period-1", LISTENER, "budget-1")
        day = self.days[period]
        self.days[period] += 1
        self.money.closed_day(listener, day, period, listened, {"node-1": NODES["node-1"]})
        if second and self.refunded_at is not None:
            refused = self.world.submit("AllocateListenerDay", {"listener_id": listener, "day": day,
                                                                "budget_id": budget, "line_ids": ["none"]}, actor=FINANCE)
            assert refused.code == "INVALID_STATE", refused.result
            return
        outcome = self.money.allocate(listener, day, budget)
        self.expect(outcome)
        if outcome.accepted:
            for line_id in outcome.result["data"]["line_ids"]:
                line = self.world.state(f"allocation_line/{line_id}")
                if line["recipient_id"] in self.lines:
                    self.lines[line["recipient_id"]].append(line_id)
            # Statements frozen before these lines existed say nothing of them.
            self.statements = dict(zip(sorted(RECIPIENTS), self.world.confirmed_statements()))

    @precondition(lambda self: self.refunded_at is None)
    @rule()
    def the_second_period_is_refunded(self):
        evidence = digest("refund", SECOND_PERIOD)
        outcome = self.money.submit("ApplyBillingObservation", {
            "provider": "test-pay", "event_id": "refund-1", "kind": "payment_refunded",
            "occurred_at_ms": self.world.now_ms, "provider_period_id": f"pp-{SECOND_PERIOD}",
            "period_id": SECOND_PERIOD, "account_id": SECOND_LISTENER, "evidence_digest": evidence},
            actor=INGEST, evidence=[evidence])
        assert outcome.accepted, outcome.result
        assert self.world.state(f"budget/{SECOND_BUDGET}")["unallocated"] == "0"
        self.refunded_at = outcome.sequence

    # Corrections: one finance actor requests, another decides.
    @rule(pick=st.integers(0, 10**6), count=st.integers(1, 3), replace=st.booleans(),
          remainder_to=st.sampled_from(["unallocated", "refund"]), requester=st.sampled_from(FINANCE_ACTORS))
    def request_a_correction(self, pick, count, replace, remainder_to, requester):
        payable = [line for line in records(self.owner, "allocation_line/")
                   if line["status"] == "payable" and not line.get("pending_correction")]
        if not payable:
            return
        first = payable[pick % len(payable)]
        same_day = [line for line in payable if (line["listener_id"], line["day"], line["budget_id"])
                    == (first["listener_id"], first["day"], first["budget_id"])][:count]
        total = sum(int(line["amount"]) for line in same_day)
        self.corrections += 1
        correction_id = f"fix-{self.corrections}"
        shares = largest_remainder_oracle(total, RIGHTS["work-3"]) if replace else {}
        replacements = [{"line_id": f"{correction_id}-{recipient}", "role": "artist", "recipient_id": recipient,
                         "work_id": "work-3", "rights_version": 1, "amount": str(share)}
                        for recipient, share in sorted(shares.items()) if share]
        outcome = self.money.request_correction(correction_id, first["budget_id"], actor=requester,
                                                reverses=sorted(line["line_id"] for line in same_day),
                                                replacements=replacements, remainder_to=remainder_to)
        if self._releases_into_a_refunded_budget(first["budget_id"], remainder_to, total - sum(shares.values())):
            assert (outcome.outcome, outcome.code) == ("rejected", "INVALID_STATE"), outcome.result
        else:
            assert outcome.accepted, outcome.result

    def _releases_into_a_refunded_budget(self, budget_id: str, remainder_to: str, remainder: int) -> bool:
        return (remainder_to == "unallocated" and remainder > 0
                and self.world.state(f"budget_refund/{budget_id}") is not None)

    @rule(pick=st.integers(0, 100), approve=st.booleans(), same_actor=st.integers(0, 9))
    def decide_a_correction(self, pick, approve, same_actor):
        pending = [request for request in records(self.owner, "correction_request/")
                   if request["status"] == "requested"]
        if not pending:
            return
        request = pending[pick % len(pending)]
        decider = request["requested_by"] if same_actor == 0 else \
            next(actor for actor in FINANCE_ACTORS if actor != request["requested_by"])
        outcome = self.money.decide_correction(request["correction_id"], "approve" if approve else "decline",
                                               actor=decider, decline_reason=None if approve else "superseded")
        released = int(request["amounts"]["released"])
        if same_actor == 0:
            assert outcome.code == "FOUR_EYES_REQUIRED", outcome.result
        elif approve and self._releases_into_a_refunded_budget(request["budget_id"], request["remainder_to"],
                                                               released):
            assert (outcome.outcome, outcome.code) == ("rejected", "INVALID_STATE"), outcome.result  # refunded since
        else:
            assert outcome.accepted, outcome.result

    @rule()
    def full_check(self):
        outcome = self.world.submit("CheckConservation", {"check_id": f"check-{self.owner.head().sequence}"},
                                    actor=FINANCE_2)
        assert outcome.result["data"]["status"] == "clear", self.world.state("conservation")

    @rule()
    def notice_runs_the_ledger_prepared_again(self):
        """Runs a recipient update prepared at a new address join the ones the rules may work."""
        for run in records(self.owner, "payment_run/"):
            if run["run_id"] not in self.runs:
                self.runs.append(run["run_id"])
                self.payments += [payment["payment_id"] for payment in run["frozen"]["payments"]]

    # Invariants.
    @invariant()
    def one_lot_per_deposit_however_spelled(self):
        lots = records(self.owner, "lot/")
        units = Counter((lot["deposit"]["transaction_hash"], lot["deposit"]["event_index"]) for lot in lots)
        assert all(count == 1 for count in units.values()), units
        assert {("0x" + tx, index) for tx, index in self.units} <= set(units)
        assert len({lot["deposit"]["evidence_digest"] for lot in lots}) == len(lots)

    @invariant()
    def nothing_signed_while_an_address_change_was_pending(self):
        updates = records(self.owner, "recipient_update/")
        for attempt in records(self.owner, "payment_attempt/"):
            recipient = self.world.state(f"payment/{attempt['payment_id']}")["recipient_id"]
            for update in updates:
                decided = update["decision"]["decided_at_ms"] if update["decision"] else float("inf")
                if update["recipient_id"] == recipient:
                    assert not update["requested_at_ms"] < attempt["signed_at_ms"] < decided, (attempt, update)

    @invariant()
    def a_refunded_period_allocates_nothing_after_its_refund(self):
        if self.refunded_at is None:
            return
        for line in records(self.owner, "allocation_line/"):
            if line["budget_id"] == SECOND_BUDGET and line["correction_id"] is None:
                assert line["created"]["sequence"] < self.refunded_at, line

    @invariant()
    def each_correction_posts_once(self):
        journals = Counter(event["journal"] for _, event in self.owner.scan(EVENTS, limit=10**7)
                           if event["type"] == "Posted" and event["journal"].startswith("correction:"))
        approved = {request["correction_id"] for request in records(self.owner, "correction_request/")
                    if request["status"] == "approved"}
        assert {journal.split(":", 1)[1] for journal in journals} <= approved
        assert all(count == 1 for count in journals.values()), journals


MoneyRulesMachine.TestCase.settings = settings(
    max_examples=examples(60), stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TestMoneyRulesInterleavings = MoneyRulesMachine.TestCase
