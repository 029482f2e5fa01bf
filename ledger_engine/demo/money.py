"""Demo stage 3: budget funding, allocation of every closed listener-day (the last day frozen), a refund, corrections.

The stage reads what earlier stages left in the cast: the rights each work was
activated with (``cast.rights``), the periods whose payment cleared
(``cast.periods``) and the listener-days closed (``cast.closed_days``, as
CloseDay recorded them). Each period's converted net revenue arrives as a
fixture deposit that funds its budget in the same ImportFunding, at
``USDC_PER_LISTENER_DAY`` per day; the first budget also gets an approved
addition drawn from a foundation lot. Every closed day but the last is planned
with the same london-1 functions the ledger runs, so the stage supplies exactly
one line ID per output line; the last day is allocated as finance allocates a
city's day, split and frozen into day lines (``frozen_day.py``). Then the
provider refunds the last period (its budget gives up what it has not
allocated), a rights error is corrected (a new rights version; demo-finance-1
requests, demo-finance-2 approves), a second correction is left requested for a
person to decide in the console, conservation is checked, and the payable lines
go to the payout stage (``build_payouts``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ledger_engine.application.day_allocator import Skipped, unfunded
from ledger_engine.demo.builder import DemoBuilder, fixture_digest
from ledger_engine.demo.frozen_day import freeze_day
from ledger_engine.demo.foundation import INGEST, USDC_PER_LISTENER_DAY, Cast
from ledger_engine.domain.allocation_policy import ARTIST, Listening, PlannedLine, Policy, Serving
from ledger_engine.domain.commands.money.allocation import POLICY_KEY, ListenerDayInputs
from ledger_engine.domain.commands.money.budgets import slice_for_day
from ledger_engine.domain.commands.money.corrections import RequestCorrectionPayload, freeze_request, request_hash
from ledger_engine.domain.schema.money_allocation import BudgetTerms, DayLineArtifact, budget_key
from ledger_engine.domain.schema.streaming import ListenedWork, ListenerDay, Period, listener_day_key
from ledger_engine.domain.commands.streaming.policy import day_of
from ledger_engine.domain.ruleset import LONDON_1_POLICY
from ledger_engine.errors import LedgerError
from ledger_engine.layout import STATE
from ledger_engine.open_json import Unvalidated

ALLOCATOR = "demo-finance-1"
APPROVER = "demo-finance-2"
POLICY = Policy(LONDON_1_POLICY["operator_pool_bps"], LONDON_1_POLICY["porto_retained_bps"])


@dataclass(frozen=True)
class PayableLine:
    """One payable allocation line (revision 1), or a frozen day's day line, as the payout stage needs it."""

    line_id: str
    recipient_id: str | None  # none for Porto's retained share (``Allocation.retained``)
    role: str
    amount: int
    budget_id: str | None  # none for a day line, which pays from a frozen chunk of many budgets' days
    listener_id: str | None  # none for a day line
    day: int
    work_id: str | None = None
    rights_version: int | None = None
    node_id: str | None = None
    artifact: DayLineArtifact | None = None  # a day line's chunk


@dataclass
class Allocation:
    """What the payout stage pays from: payable lines, and each budget's record revision after this stage."""

    payable: list[PayableLine] = field(default_factory=list)
    budget_revisions: dict[str, int] = field(default_factory=dict)
    retained: list[PayableLine] = field(default_factory=list)  # Porto's share of each allocated day
    refunded: set[str] = field(default_factory=set)  # budgets whose period was refunded


@dataclass
class _Budget:
    """The stage's copy of a budget's funding: enough to compute its day slices."""

    budget_id: str
    period_id: str
    terms: BudgetTerms


def build_money(builder: DemoBuilder, cast: Cast, *, days: int) -> None:
    del days  # the periods and closed days say which days there are
    from ledger_engine.demo.payouts import build_payouts  # that module imports this one's types

    periods, closed_days = cast.periods, cast.closed_days
    allocation = Allocation()
    budgets = {period["period_id"]: _fund(builder, period, allocation) for period in sorted(
        periods, key=lambda p: p["period_id"])}
    if budgets and cast.lots:
        _add_to(builder, budgets[min(budgets)], cast.lots[0], allocation)
    frozen_day = _day_to_freeze(closed_days)
    for closed in sorted(closed_days, key=lambda d: (d["listener_id"], d["day"])):
        if closed["period_id"] in budgets and closed["day"] != frozen_day:
            _allocate(builder, cast, budgets[closed["period_id"]], closed, allocation)
    if frozen_day is not None:
        _freeze(builder, cast, budgets, [closed for closed in closed_days if closed["day"] == frozen_day], allocation)
    if len(periods) > 1:
        _refund(builder, max(periods, key=lambda p: p["period_id"]), budgets, allocation)
    _correct_a_rights_error(builder, cast, allocation)
    _request_a_review_of_porto_share(builder, allocation)
    builder.add("CheckConservation", {"check_id": builder.new_id()}, actor=ALLOCATOR)
    build_payouts(builder, cast, allocation)


def _fund(builder: DemoBuilder, period: Period, allocation: Allocation) -> _Budget:
    """The period's converted revenue arrives as a deposit that funds its budget in the same command."""
    budget_id, lot_id = builder.new_id(), f"demo-period-lot-{period['period_id']}"
    amount = period["days"] * USDC_PER_LISTENER_DAY
    evidence = fixture_digest(lot_id, "deposit")
    builder.add("ImportFunding", {
        "lot_id": lot_id, "asset": "USDC", "amount": str(amount), "conversion_ref": f"demo-conversion-{period['period_id']}",
        "deposit": {"chain": "simulated", "transaction_hash": fixture_digest(lot_id, "tx"), "event_index": 0,
                    "evidence_digest": evidence},
        "budgets": [{"budget_id": budget_id, "period_id": period["period_id"], "version": 1,
                     "draws": [{"lot_id": lot_id, "amount": str(amount)}]}],
    }, actor=INGEST, evidence=[evidence])
    allocation.budget_revisions[budget_id] = 1
    terms: BudgetTerms = {"first_day": day_of(period["start_ms"]), "days": period["days"],
                          "lots": [{"lot_id": lot_id, "amount": str(amount), "version": 1}]}
    return _Budget(budget_id, period["period_id"], terms)


def _add_to(builder: DemoBuilder, budget: _Budget, lot_id: str, allocation: Allocation) -> None:
    """A finance-approved addition of one listener-day's worth, drawn from an earlier lot."""
    builder.add("ImportFunding", {"budgets": [{
        "budget_id": budget.budget_id, "period_id": budget.period_id, "version": 2,
        "draws": [{"lot_id": lot_id, "amount": str(USDC_PER_LISTENER_DAY)}]}]}, actor=ALLOCATOR)
    budget.terms["lots"].append({"lot_id": lot_id, "amount": str(USDC_PER_LISTENER_DAY), "version": 2})
    allocation.budget_revisions[budget.budget_id] += 1


def _allocate(builder: DemoBuilder, cast: Cast, budget: _Budget, closed: ListenerDay,
              allocation: Allocation) -> None:
    if not sum(work["listened_ms"] for work in closed["works"]):
        return  # no eligible listening: the day's slice stays unallocated
    inputs = _inputs(cast, budget, closed, allocation)
    lines = inputs.split()
    line_ids = [builder.new_id() for _ in lines]
    builder.add("AllocateListenerDay", {
        "listener_id": closed["listener_id"], "day": closed["day"], "budget_id": budget.budget_id, "line_ids": line_ids,
    }, actor=ALLOCATOR, expected=[{"cf": STATE, "key": k, "revision": r} for k, r in sorted(inputs.revisions.items())])
    allocation.budget_revisions[budget.budget_id] += 1
    allocation.payable += [_payable(line_id, line, budget.budget_id, closed)
                           for line_id, line in zip(line_ids, lines) if line.recipient_id is not None]
    allocation.retained += [_payable(line_id, line, budget.budget_id, closed)
                            for line_id, line in zip(line_ids, lines) if line.recipient_id is None]


def _inputs(cast: Cast, budget: _Budget, closed: ListenerDay, allocation: Allocation) -> ListenerDayInputs:
    """What the ledger's split of a closed listener-day reads, as the ledger will hold it then."""
    listening = tuple(Listening(w["work_id"], w["rights_version"], w["listened_ms"], _splits(cast, w))
                      for w in closed["works"])
    serving = tuple(Serving(n["node_id"], n["operator_id"], n["served_bytes"]) for n in closed["nodes"])
    revisions = {listener_day_key(closed["listener_id"], closed["day"]): 1, POLICY_KEY: 1,
                 budget_key(budget.budget_id): allocation.budget_revisions[budget.budget_id]}
    return ListenerDayInputs(closed["listener_id"], closed["day"], budget.budget_id,
                             slice_for_day(budget.terms, closed["day"]), listening, serving, POLICY, revisions)


def _day_to_freeze(closed_days: list[ListenerDay]) -> int | None:
    """The last closed day, when there is another before it: the earlier days are allocated listener-day by
    listener-day, the last one by a frozen artifact."""
    days = sorted({closed["day"] for closed in closed_days})
    return days[-1] if len(days) > 1 else None


def _freeze(builder: DemoBuilder, cast: Cast, budgets: dict[str, _Budget], closed_days: list[ListenerDay],
            allocation: Allocation) -> None:
    """The day's listener-days split as the day allocator splits them, in listener-day key order, and frozen."""
    planned, refused = [], []
    for closed in sorted(closed_days, key=lambda d: listener_day_key(d["listener_id"], d["day"])):
        budget = budgets.get(closed["period_id"])
        if budget is None:
            refused.append(unfunded(closed["listener_id"], closed["period_id"]))
            continue
        inputs = _inputs(cast, budget, closed, allocation)
        try:
            planned.append((inputs, inputs.split()))
        except LedgerError as error:  # nothing eligible to allocate: the day loop holds it with this code
            refused.append(Skipped(closed["listener_id"], str(error.code), error.detail))
    if not planned:
        return
    frozen = freeze_day(builder, closed_days[0]["day"], planned, refused)
    for budget_id in frozen.budgets:
        allocation.budget_revisions[budget_id] += 1
    allocation.payable += [PayableLine(line.line_id, line.recipient_id, line.role, line.amount, None, None,
                                       line.artifact["day"], artifact=line.artifact)
                           for line in frozen.lines if line.recipient_id is not None]


def _splits(cast: Cast, work: ListenedWork) -> tuple[tuple[str, int], ...]:
    rights = cast.rights[work["work_id"]]
    assert rights["version"] == work["rights_version"], work
    return tuple((r["recipient_id"], r["split_bps"]) for r in rights["recipients"])


def _payable(line_id: str, line: PlannedLine, budget_id: str, closed: ListenerDay) -> PayableLine:
    return PayableLine(line_id, line.recipient_id, line.role, line.amount, budget_id, closed["listener_id"],
                       closed["day"], work_id=line.work_id, rights_version=line.rights_version, node_id=line.node_id)


def _refund(builder: DemoBuilder, period: Period, budgets: dict[str, _Budget], allocation: Allocation) -> None:
    """The provider refunds a period after its days were allocated: the rest of its budget leaves it."""
    event_id = f"demo-refund-{period['period_id']}"
    evidence = fixture_digest(event_id, "billing-event")
    builder.add("ApplyBillingObservation", {
        "provider": period["provider"], "event_id": event_id, "kind": "payment_refunded",
        "occurred_at_ms": builder.clock_ms, "provider_period_id": period["provider_period_id"],
        "period_id": period["period_id"], "account_id": period["account_id"], "evidence_digest": evidence,
    }, actor=INGEST, evidence=[evidence])
    if period["period_id"] in budgets:
        allocation.budget_revisions[budgets[period["period_id"]].budget_id] += 1
        allocation.refunded.add(budgets[period["period_id"]].budget_id)


def _correct_a_rights_error(builder: DemoBuilder, cast: Cast, allocation: Allocation) -> None:
    """One work's rights version named the wrong holder: version 2 names the right one, and one listener-day's
    lines of that work are reversed and paid again by version 2's splits."""
    wrong = next((line for line in allocation.payable if line.role == ARTIST), None)
    if wrong is None:
        return
    assert wrong.work_id is not None and wrong.budget_id is not None, "day lines follow the listener-days' lines"
    rights = cast.rights[wrong.work_id]
    right_artist = next(artist for artist in cast.artists
                        if artist not in {r["recipient_id"] for r in rights["recipients"]})
    version = rights["version"] + 1
    builder.add("ActivateWork", {"work_id": wrong.work_id, "rights": {
        "version": version, "effective_at_ms": builder.clock_ms, "licence_ref": f"demo-licence-{wrong.work_id}-v{version}",
        "recipients": [{"recipient_id": right_artist, "split_bps": 10_000}]}}, actor=INGEST)
    cast.rights[wrong.work_id] = {**rights, "version": version,
                                  "recipients": [{"recipient_id": right_artist, "split_bps": 10_000}]}
    reversed_lines = [line for line in allocation.payable if line.role == ARTIST and line.work_id == wrong.work_id
                      and (line.listener_id, line.day, line.rights_version) == (wrong.listener_id, wrong.day,
                                                                                wrong.rights_version)]
    replacement = PayableLine(builder.new_id(), right_artist, ARTIST, sum(line.amount for line in reversed_lines),
                              wrong.budget_id, wrong.listener_id, wrong.day, work_id=wrong.work_id,
                              rights_version=version)
    _correct(builder, {
        "correction_id": builder.new_id(), "budget_id": wrong.budget_id, "reason": "rights_error",
        "reverses": sorted(line.line_id for line in reversed_lines),
        "replacements": [{"line_id": replacement.line_id, "role": ARTIST, "recipient_id": right_artist,
                          "work_id": wrong.work_id, "rights_version": version, "amount": str(replacement.amount)}],
    }, reversed_lines, decide=True)
    allocation.budget_revisions[wrong.budget_id] += 1
    allocation.payable = [line for line in allocation.payable if line not in reversed_lines] + [replacement]


def _request_a_review_of_porto_share(builder: DemoBuilder, allocation: Allocation) -> None:
    """A correction left requested: demo-finance-2 decides it in the console. What a refunded budget takes back
    leaves it as a refund: nothing may allocate it again."""
    if not allocation.retained:
        return
    line = allocation.retained[-1]
    remainder_to = "refund" if line.budget_id in allocation.refunded else "unallocated"
    _correct(builder, {"correction_id": builder.new_id(), "budget_id": line.budget_id, "reason": "allocation_error",
                       "reverses": [line.line_id], "remainder_to": remainder_to}, [line], decide=False)


def _correct(builder: DemoBuilder, payload: Unvalidated, reversed_lines: list[PayableLine], *, decide: bool) -> None:
    """RequestCorrection by demo-finance-1; with ``decide``, its approval by demo-finance-2, restating the hash."""
    builder.add("RequestCorrection", payload, actor=ALLOCATOR)
    if not decide:
        return
    recorded = [{"line_id": line.line_id, "role": line.role, "recipient_id": line.recipient_id,
                 "amount": str(line.amount), "status": "paid" if line.recipient_id is None else "payable",
                 "listener_id": line.listener_id, "day": line.day} for line in sorted(reversed_lines, key=by_line_id)]
    frozen = freeze_request(RequestCorrectionPayload.model_validate(payload), recorded)
    builder.add("DecideCorrection", {"correction_id": payload["correction_id"], "request_hash": request_hash(frozen),
                                     "action": "approve"}, actor=APPROVER, step_up=True)


def by_line_id(line: PayableLine) -> str:
    return line.line_id
