"""Random interleavings of funding, allocation, corrections, checks and payouts conserve every budget after every step."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from tests.money_allocation.oracle import conservation_problems, largest_remainder_oracle
from tests.money_allocation.world import FINANCE, FINANCE_2, FIRST_DAY, OPERATORS, RIGHTS, ScratchLedger, funding
from tests.money_payouts.test_state_machine import PayoutMachine
from tests.money_payouts.world import LISTENER as PAYOUT_LISTENER
from tests.money_payouts.world import RECIPIENTS
from tests.support.tiers import examples

LISTENERS, DAYS = 3, 4
# Codes a well-formed command may meet in a random history; anything else is a bug.
EXPECTED_REJECTIONS = {"INSUFFICIENT_FUNDS", "ALREADY_ALLOCATED"}


def work_3_lines(prefix: str, amount: int) -> list[dict]:
    """Replacement lines paying ``amount`` of work-3 as its rights version 1 splits it."""
    shares = largest_remainder_oracle(amount, RIGHTS["work-3"])
    return [{"line_id": f"{prefix}-{recipient}", "role": "artist", "recipient_id": recipient, "work_id": "work-3",
             "rights_version": 1, "amount": str(share)} for recipient, share in sorted(shares.items()) if share]


class AllocationMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.scratch = ScratchLedger("porto-allocation-machine-")
        self.owner, self.world = self.scratch.owner, self.scratch.world
        self.lots = ["lot-0"]
        self.funding_versions = {number: 1 for number in range(LISTENERS)}
        for number in range(LISTENERS):
            self.world.period(f"period-{number}", f"listener-{number}", days=DAYS)
        assert self.world.lot("lot-0", LISTENERS * 10**6, [
            funding(f"budget-{number}", f"period-{number}", {"lot-0": 10**6 - number}) for number in range(LISTENERS)
        ]).accepted
        self.closed: set[tuple[int, int]] = set()
        self.corrections = 0

    def teardown(self) -> None:
        self.scratch.close()

    def expect(self, outcome) -> None:
        assert outcome.accepted or outcome.code in EXPECTED_REJECTIONS, outcome.result

    @rule(amount=st.integers(1, 10**7))
    def import_lot(self, amount):
        lot_id = f"lot-{len(self.lots)}"
        self.expect(self.world.lot(lot_id, amount))
        self.lots.append(lot_id)

    @rule(listener=st.integers(0, LISTENERS - 1), lot=st.integers(0, 50), amount=st.integers(1, 10**7))
    def fund(self, listener, lot, amount):
        version = self.funding_versions[listener] + 1
        outcome = self.world.fund(f"budget-{listener}", f"period-{listener}",
                                  {self.lots[lot % len(self.lots)]: amount}, version=version, actor=FINANCE)
        self.expect(outcome)
        if outcome.accepted:
            self.funding_versions[listener] = version

    @rule(listener=st.integers(0, LISTENERS - 1), day=st.integers(0, DAYS - 1),
          listened=st.dictionaries(st.sampled_from(sorted(RIGHTS)), st.integers(1, 10**6), min_size=1),
          served=st.dictionaries(st.sampled_from(["node-1", "node-2", "node-3"]), st.integers(0, 10**9)))
    def allocate(self, listener, day, listened, served):
        if (listener, day) not in self.closed:
            nodes = {node: (OPERATORS[int(node[-1]) % 2], size) for node, size in served.items()}
            self.world.closed_day(f"listener-{listener}", FIRST_DAY + day, f"period-{listener}", listened, nodes)
            self.closed.add((listener, day))
        self.expect(self.world.allocate(f"listener-{listener}", FIRST_DAY + day, f"budget-{listener}"))

    @precondition(lambda self: self.world.line_counter)
    @rule(line=st.integers(0, 10**6), count=st.integers(1, 6), replace_share=st.integers(0, 100),
          remainder_to=st.sampled_from(["unallocated", "refund"]))
    def correct(self, line, count, replace_share, remainder_to):
        first = self.world.state(f"allocation_line/line-{line % self.world.line_counter:06d}")
        if first is None:
            return
        same_day = [data for _, data in self.records("allocation_line/")
                    if (data["listener_id"], data["day"]) == (first["listener_id"], first["day"])
                    and data["status"] in ("payable", "paid") and data["reversed_by"] is None
                    and data["budget_id"] == first["budget_id"]
                    and (data["role"] == "porto" or data["status"] == "payable")][:count]
        if not same_day:
            return
        reversed_total = sum(int(data["amount"]) for data in same_day)
        replaced = reversed_total * replace_share // 100
        replacements = work_3_lines(f"fix-line-{self.corrections}", replaced)
        self.corrections += 1
        self.expect(self.world.correct(f"fix-{self.corrections}", first["budget_id"], remainder_to=remainder_to,
                                       reverses=sorted(data["line_id"] for data in same_day),
                                       replacements=replacements))

    @rule(listener=st.integers(0, LISTENERS - 1), amount=st.integers(1, 10**7))
    def refund_unallocated(self, listener, amount):
        self.corrections += 1
        self.expect(self.world.correct(f"fix-{self.corrections}", f"budget-{listener}",
                                       reason="subscription_refund", refund_unallocated=str(amount)))

    @rule()
    def full_check(self):
        outcome = self.world.check(f"check-{self.owner.head().sequence}")
        assert outcome.result["data"]["status"] == "clear", self.world.state("conservation")

    def records(self, prefix: str):
        return [(key, value["data"]) for key, value in self.owner.scan("state", prefix, limit=10**6)]

    @invariant()
    def conserved(self):
        assert conservation_problems(self.owner) == []

    @invariant()
    def lots_never_overdrawn(self):
        for _, lot in self.records("lot/"):
            assert int(lot["allocated"]) <= int(lot["received"])


AllocationMachine.TestCase.settings = settings(
    max_examples=examples(30), stateful_step_count=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TestAllocationInterleavings = AllocationMachine.TestCase


class AllocationAndPayoutMachine(PayoutMachine):
    """The payout machine's rules interleaved with allocating more days, corrections and full checks.

    Everything is submitted on the payout world's clock; the payout machine's
    invariants (lines, payments, budgets and postings agree; paid once) hold
    after every step.
    """

    def __init__(self) -> None:
        super().__init__()
        self.money = self.world.money
        self.next_day = 1 + max(line["day"] for _, line in self.records())
        self.corrections = 0

    def accepted(self, command_type: str, payload: dict, **options) -> None:
        outcome = self.world.submit(command_type, payload, actor=FINANCE, **options)
        assert outcome.accepted, (command_type, outcome.result)

    @precondition(lambda self: self.next_day < FIRST_DAY + 30)
    @rule(listened=st.dictionaries(st.sampled_from(sorted(RIGHTS)), st.integers(1, 10**6), min_size=1))
    def allocate_another_day(self, listened):
        self.money.closed_day(PAYOUT_LISTENER, self.next_day, "period-1", listened, {"node-1": ("operator-x", 10)})
        plan = self.money.plan(PAYOUT_LISTENER, self.next_day, "budget-1")
        line_ids = self.money.new_line_ids(len(plan.lines))
        self.accepted("AllocateListenerDay", {
            "listener_id": PAYOUT_LISTENER, "day": self.next_day, "budget_id": "budget-1", "line_ids": line_ids},
            expected=plan.expected_revisions())
        self.next_day += 1
        for line_id, line in zip(line_ids, plan.lines):
            if line.recipient_id in self.lines:
                self.lines[line.recipient_id].append(line_id)  # the payout rules may now pick it
        # Statements frozen before these lines existed say nothing of them: approvals cite new ones.
        self.statements = dict(zip(sorted(RECIPIENTS), self.world.confirmed_statements()))

    @rule(pick=st.integers(0, 10**6), replace=st.booleans(), remainder_to=st.sampled_from(["unallocated", "refund"]))
    def correct_a_payable_line(self, pick, replace, remainder_to):
        payable = [line for _, line in self.records() if line["status"] == "payable"]
        if not payable:
            return
        line = payable[pick % len(payable)]
        self.corrections += 1
        replacements = work_3_lines(f"fix-line-{self.corrections}", int(line["amount"])) if replace else []
        correction_id = f"fix-{self.corrections}"
        requested = self.world.submit("RequestCorrection", {
            "correction_id": correction_id, "budget_id": line["budget_id"], "reason": "rights_error",
            "reverses": [line["line_id"]], "replacements": replacements, "remainder_to": remainder_to}, actor=FINANCE)
        assert requested.accepted, requested.result
        decided = self.world.submit("DecideCorrection", {
            "correction_id": correction_id, "request_hash": requested.result["data"]["request_hash"],
            "action": "approve"}, actor=FINANCE_2, step_up=True)
        assert decided.accepted, decided.result

    @rule()
    def full_check(self):
        outcome = self.world.submit("CheckConservation", {"check_id": f"check-{self.owner.head().sequence}"},
                                    actor=FINANCE)
        assert outcome.result["data"]["status"] == "clear", self.world.state("conservation")

    def records(self):
        return [(key, value["data"]) for key, value in self.owner.scan("state", "allocation_line/", limit=10**6)]


AllocationAndPayoutMachine.TestCase.settings = settings(
    max_examples=examples(25), stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TestAllocationAndPayoutInterleavings = AllocationAndPayoutMachine.TestCase
