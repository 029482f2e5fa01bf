"""AllocateListenerDay: a closed listener-day's slice of its period budget, split by london-1.

The caller plans the day first (``plan_listener_day``, the same function the
rule runs) and supplies one new line ID per output line, in canonical output
order, with the expected revisions of the listener-day, the budget and the
policy. The rule recomputes the plan, binds the IDs in order and takes the
sentinel ``unique/allocation/<listener_id>/<seq20(day)>``, so a day is
allocated at most once. Artist and operator lines are payable; Porto's
retained share is a line too, ``paid`` when it is allocated, so every unit
that leaves ``unallocated`` is on exactly one line.

    Dr budget_unallocated:<budget>   Cr artist_payable:<recipient>...
                                     Cr operator_payable:<operator>...
                                     Cr porto_retained
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from pydantic import Field, field_validator

from ledger_engine.amounts import format_amount, parse_amount
from ledger_engine.domain.allocation_policy import (
    ARTIST, OPERATOR, PORTO, Listening, PlannedLine, Policy, Serving, split_listener_day,
)
from ledger_engine.domain.changes import Changes, Rejected, require, require_present
from ledger_engine.domain.chart import PORTO_RETAINED, artist_payable, budget_unallocated, operator_payable
from ledger_engine.domain.commands.money.budgets import BUDGET_ASSET, day_index, load_budget, slice_for_day
from ledger_engine.domain.commands.money.lines import move_budget
from ledger_engine.domain.schema.streaming import (
    ListenedWork, ListenerDay, RightsVersion, listener_day_key, period_key, rights_key,
)
from ledger_engine.domain.invariants import require_conserved
from ledger_engine.domain.postings import Line, credit, debit, post
from ledger_engine.domain.provenance import created
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.ruleset import RULESET_VERSION
from ledger_engine.domain.schema.money_allocation import (
    Budget, BudgetTerm, Created, DayLineArtifact, allocation_sentinel_key, budget_key, line_key,
)
from ledger_engine.domain.types import Count, Identifier
from ledger_engine.domain.view import StateView
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import key
from ledger_engine.layout import STATE
from ledger_engine.open_json import CommandResult, RecordData, Unvalidated

MAX_LINES = 4096
POLICY_KEY = key("ruleset", RULESET_VERSION)


@dataclass(frozen=True)
class AllocationPlan:
    """What allocating one listener-day would do, and the record revisions it was planned against."""

    slice_amount: int
    lines: list[PlannedLine]
    revisions: dict[str, int]  # state key -> revision

    def expected_revisions(self) -> list[Unvalidated]:
        return [{"cf": STATE, "key": state_key, "revision": revision}
                for state_key, revision in sorted(self.revisions.items())]


@dataclass(frozen=True)
class ListenerDayInputs:
    """Everything the ``london-1`` split of one listener-day reads, checked allocatable, and the revisions read."""

    listener_id: str
    day: int
    budget_id: str
    slice_amount: int
    listening: tuple[Listening, ...]
    serving: tuple[Serving, ...]
    policy: Policy
    revisions: dict[str, int]  # state key -> revision

    def split(self) -> list[PlannedLine]:
        return split_listener_day(self.slice_amount, list(self.listening), list(self.serving), self.policy)


@dataclass(frozen=True)
class AllocatableDay:
    """A listener-day checked allocatable from its budget (not yet split), with the records an allocation reads."""

    listener_day: ListenerDay
    budget: Budget
    policy: RecordData
    slice_amount: int
    revisions: dict[str, int]  # state key -> revision: the listener-day's, the budget's and the policy's


def allocatable_day(view: StateView, listener_id: str, day: int, budget_id: str) -> AllocatableDay:
    """The checks every allocation of a listener-day makes before its split, in the rule's order; a freeze
    (commands/money/freeze.py), which does not split again, makes these alone."""
    day_record = require_present(view.get(STATE, listener_day_key(listener_id, day)), ErrorCode.NOT_FOUND,
                                 f"listener-day {listener_id}/{day} does not exist")
    budget_record = require_present(view.get(STATE, budget_key(budget_id)), ErrorCode.NOT_FOUND,
                                    f"budget {budget_id} does not exist")
    policy_record = view.get(STATE, POLICY_KEY)
    assert policy_record is not None, "genesis records the ruleset's allocation policy"
    listener_day = day_record.data_as(ListenerDay)
    budget = budget_record.data_as(Budget)
    _require_allocatable(listener_day, budget, budget_id)
    period = view.get(STATE, period_key(budget["period_id"]))
    require(period is not None and period.data["clearance"] != "refunded", ErrorCode.INVALID_STATE,
            f"period {budget['period_id']} was refunded: budget {budget_id} allocates nothing more")
    return AllocatableDay(
        listener_day, budget, policy_record.data["allocation_policy"], slice_for_day(budget, day),
        {listener_day_key(listener_id, day): day_record.revision, budget_key(budget_id): budget_record.revision,
         POLICY_KEY: policy_record.revision})


def listener_day_inputs(view: StateView, listener_id: str, day: int, budget_id: str) -> ListenerDayInputs:
    checked = allocatable_day(view, listener_id, day, budget_id)
    listener_day, policy = checked.listener_day, checked.policy
    return ListenerDayInputs(
        listener_id, day, budget_id, checked.slice_amount,
        tuple(listening_of(view, work) for work in listener_day["works"]),
        tuple(Serving(node["node_id"], node["operator_id"], node["served_bytes"]) for node in listener_day["nodes"]),
        Policy(policy["operator_pool_bps"], policy["porto_retained_bps"]),
        checked.revisions,
    )


def plan_listener_day(view: StateView, listener_id: str, day: int, budget_id: str) -> AllocationPlan:
    inputs = listener_day_inputs(view, listener_id, day, budget_id)
    return AllocationPlan(inputs.slice_amount, inputs.split(), inputs.revisions)


def _require_allocatable(listener_day: ListenerDay, budget: Budget, budget_id: str) -> None:
    name = f"listener-day {listener_day['listener_id']}/{listener_day['day']}"
    require(listener_day["status"] == "closed", ErrorCode.INVALID_STATE, f"{name} is not closed")
    require(listener_day["hold_free"], ErrorCode.HOLDS_OPEN, f"{name} has undecided holds")
    require(listener_day["period_id"] == budget["period_id"], ErrorCode.INVALID_REFERENCE,
            f"{name} is in period {listener_day['period_id']}, budget {budget_id} funds {budget['period_id']}")
    require(1 <= day_index(budget, listener_day["day"]) <= budget["days"], ErrorCode.INVALID_TIME,
            f"{name} is outside budget {budget_id}'s period")


def listening_of(view: StateView, work: ListenedWork) -> Listening:
    record = view.get(STATE, rights_key(work["work_id"], work["rights_version"]))
    if record is None:  # not ``require``: its detail would be formatted for every work of every listener-day
        raise Rejected(ErrorCode.INVALID_REFERENCE, f"work {work['work_id']} has no rights version {work['rights_version']}")
    rights = record.data_as(RightsVersion)
    splits = tuple([(r["recipient_id"], r["split_bps"]) for r in rights["recipients"]])
    return Listening(work["work_id"], work["rights_version"], work["listened_ms"], splits)


class AllocateListenerDayPayload(Payload):
    listener_id: Identifier
    day: Count
    budget_id: Identifier
    line_ids: list[Identifier] = Field(min_length=1, max_length=MAX_LINES)

    @field_validator("line_ids")
    @classmethod
    def _distinct(cls, line_ids: list[str]) -> list[str]:
        if len(set(line_ids)) != len(line_ids):
            raise ValueError("line IDs must be distinct")
        return line_ids


@command("AllocateListenerDay", payload=AllocateListenerDayPayload, roles={"finance"})
def allocate_listener_day(ctx: RuleContext, p: AllocateListenerDayPayload) -> CommandResult:
    changes = ctx.changes
    plan = plan_listener_day(changes, p.listener_id, p.day, p.budget_id)
    for state_key in sorted(plan.revisions):
        require(ctx.states_revision_of(STATE, state_key), ErrorCode.STALE_REVISION,
                f"allocation needs the expected revision of {state_key}")
    require(len(p.line_ids) == len(plan.lines), ErrorCode.COUNT_MISMATCH,
            f"the plan has {len(plan.lines)} output lines, the payload {len(p.line_ids)} line IDs")
    changes.claim_unique(allocation_sentinel_key(p.listener_id, p.day),
                         {"budget_id": p.budget_id, "amount": format_amount(plan.slice_amount), "line_ids": p.line_ids},
                         ErrorCode.ALREADY_ALLOCATED, already_allocated(p.listener_id, p.day))
    require_slice_funded(load_budget(changes, p.budget_id), p.budget_id, plan.slice_amount)
    journal = f"allocation:{p.listener_id}:{p.day}"
    for line_id, planned in zip(p.line_ids, plan.lines):
        write_line(changes, line_id, planned, listener_id=p.listener_id, day=p.day, budget_id=p.budget_id,
                   created_by=created(ctx), correlation_id=journal)
    for term, amount in sorted(term_totals(plan.lines).items()):
        move_budget(changes, p.budget_id, "unallocated", term, amount)
    post(changes, journal=journal, asset=BUDGET_ASSET,
         lines=[debit(budget_unallocated(p.budget_id), plan.slice_amount), *credit_lines(plan.lines)])
    changes.event("ListenerDayAllocated", listener_id=p.listener_id, day=p.day, budget_id=p.budget_id,
                  amount=format_amount(plan.slice_amount), line_ids=p.line_ids)
    require_conserved(changes)
    return {"listener_id": p.listener_id, "day": p.day, "budget_id": p.budget_id,
            "amount": format_amount(plan.slice_amount), "line_ids": p.line_ids}


def already_allocated(listener_id: str, day: int) -> str:
    return f"listener-day {listener_id}/{day} is already allocated"


def require_slice_funded(budget: Budget, budget_id: str, slice_amount: int) -> None:
    unallocated = parse_amount(budget["unallocated"])
    require(unallocated >= slice_amount, ErrorCode.INSUFFICIENT_FUNDS,
            f"budget {budget_id} has {unallocated} unallocated, the day's slice is {slice_amount}")


def write_line(changes: Changes, line_id: str, planned: PlannedLine, *, listener_id: str | None, day: int,
               budget_id: str | None, created_by: Created, correlation_id: str, correction_id: str | None = None,
               replaces: list[str] | None = None, artifact: DayLineArtifact | None = None) -> None:
    """A new allocation line: payable, or paid at once for Porto's retained share.

    ``created_by`` is its provenance (the command, sequence and time that made
    it), ``correlation_id`` the journal it was posted in; a correction's line
    names the correction and the lines it ``replaces``. A day line has no
    listener and no budget and names the frozen chunk it totals, its
    ``artifact`` (ledger_engine/domain/day_lines.py); no other line has the field.
    A day line totals a recipient's part of many listenings and servings, so it
    names no work, rights version or node.
    """
    require(changes.get(STATE, line_key(line_id)) is None, ErrorCode.ALREADY_EXISTS,
            f"allocation line {line_id} already exists")
    line = {
        "line_id": line_id,
        "listener_id": listener_id,
        "day": day,
        "budget_id": budget_id,
        **(planned_fields(planned) if artifact is None else
           {"role": planned.role, "recipient_id": planned.recipient_id, "amount": format_amount(planned.amount)}),
        "status": "paid" if planned.role == PORTO else "payable",
        "run_id": None,
        "payment_id": None,
        "correction_id": correction_id,
        "replaces": replaces,
        "reversed_by": None,
        "pending_correction": None,
        "correlation_id": correlation_id,
        "created": created_by,
    }
    if artifact is not None:
        line["artifact"] = artifact
    changes.put_state(line_key(line_id), line)


def planned_fields(planned: PlannedLine) -> RecordData:
    """A planned line as stored: role, recipient and amount, then what it was earned by (a work's rights or a node)."""
    fields: RecordData = {"role": planned.role, "recipient_id": planned.recipient_id,
                              "amount": format_amount(planned.amount)}
    if planned.role == ARTIST:
        fields.update(work_id=planned.work_id, rights_version=planned.rights_version)
    elif planned.role == OPERATOR:
        fields["node_id"] = planned.node_id
    return fields


def term_totals(lines: list[PlannedLine]) -> dict[BudgetTerm, int]:
    """How much of these new lines counts as outstanding (payable) and as paid (Porto's share)."""
    totals: dict[BudgetTerm, int] = defaultdict(int)
    for line in lines:
        totals["paid" if line.role == PORTO else "outstanding"] += line.amount
    return totals


def line_account(role: str, recipient_id: str | None) -> str:
    if role not in (ARTIST, OPERATOR):
        return PORTO_RETAINED
    assert recipient_id is not None, f"an {role} line is owed to a recipient"
    return artist_payable(recipient_id) if role == ARTIST else operator_payable(recipient_id)


def credit_lines(lines: list[PlannedLine]) -> list[Line]:
    """One credit per account, accounts in name order."""
    totals: dict[str, int] = defaultdict(int)
    for line in lines:
        totals[line_account(line.role, line.recipient_id)] += line.amount
    return [credit(account, amount) for account, amount in sorted(totals.items())]
