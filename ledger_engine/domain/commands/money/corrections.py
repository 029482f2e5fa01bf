"""RequestCorrection and DecideCorrection: maker-checker corrections of allocation lines.

A correction is balancing entries that reverse allocation lines and replace
them; nothing is overwritten or deleted. One finance actor requests it (the
envelope's actor, never a payload field), another decides it, as with payout
runs:

- ``RequestCorrection`` names the prior lines by ID (all of one listener-day
  of one budget), the replacement lines and where the rest goes. The rule
  checks everything it will post, freezes it with the balancing entries in
  ``correction_request/<correction_id>`` under a request hash, and marks the
  named lines ``pending_correction`` so that no payout run takes them meanwhile.
- ``DecideCorrection`` by another finance actor (FOUR_EYES_REQUIRED
  otherwise) restates the request hash. ``approve`` checks the request again
  against the ledger as it is now and posts it, exactly once: the prior lines
  become ``reversed`` (``reversed_by``), the replacements are new lines
  (``correction_id``, ``replaces``), and ``correction/<correction_id>`` records
  what moved. ``decline`` releases the lines.

Replacement lines must be what the ledger would pay: an artist line names an
active work at its current rights version and one of that version's
recipients, and the artist lines of a work together split their total by that
version's splits (largest remainder, as allocation does); an operator line
names a node and that node's operator. Only payable lines and Porto's retained
share can be reversed: a reserved line is released by cancelling its payout
run first, and a transfer is never reversed. A day line (no budget) is never
named in ``reverses`` (INVALID_STATE): a frozen listener-day is corrected
through its day lines (docs/adr/0073). Such a correction names the listener-day
(``frozen_listener_day``) by quoting its line of the chunk's artifact
(``allocation_artifact.py``: the listener-day, its budget, slice, revisions
and lines) with the chunk's number and hash, which the envelope cites as
evidence. The rule cannot read evidence bytes, so it holds the quote to what
the ledger recorded when the chunk was frozen: the listener-day's freeze
sentinel names that chunk, budget and slice, and the quoted lines total the
slice. Replay and ``verify``, which recompute every chunk, hold the quote to
the chunk's bytes (``quoted_line_bytes``). Each recipient's part (its quoted
lines summed by role and recipient) is taken out of the chunk's live day line
for that role and recipient, which must be payable (or Porto's share) and
hold at least the part: the day line is reversed and a remainder day line
written for what is left (``day_lines.py``), so a paid or reserved day line is
never touched and the correction waits. The budget's ``frozen`` gives the
whole slice to the replacements, ``unallocated`` or ``refunds_reversals``;
the correction records what it took out of ``frozen`` (``unfrozen``) and each
part, and claims ``unique/unfrozen/<listener>/<seq20(day)>``: from then on the
listener-day's lines are the replacements, ordinary lines of its budget,
corrected like any. Whatever was reversed and not
replaced goes back to the budget's ``unallocated`` or out of it as a refund
(``refunds_reversals``, posted to ``corrections``); a correction may also
refund unallocated units, for example after a subscription refund. A refunded
budget takes nothing back: nothing may allocate its units again and no refund
would cover them, so its corrections send what they do not replace out as a
refund (``remainder_to: refund``) and are refused otherwise.

    Dr <payable or porto_retained>...      Cr <replacement payables>...   (a day line's: the part taken out)
                                           Cr budget_unallocated:<budget> | corrections   (the remainder)
    Dr budget_unallocated:<budget>         Cr corrections                                 (refund_unallocated)
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Mapping, Sequence

from pydantic import Field, field_validator, model_validator

from ledger_engine.amounts import Amount, checked_sum, format_amount, parse_amount
from ledger_engine.canonical import domain_hash, engine_bytes
from ledger_engine.domain.actors import require_other_actor
from ledger_engine.domain.allocation_policy import ARTIST, OPERATOR, PORTO, PlannedLine, split_by_rights
from ledger_engine.domain.changes import Changes, require, require_present
from ledger_engine.domain.chart import CORRECTIONS, budget_unallocated
from ledger_engine.domain.commands.money.allocation import (
    MAX_LINES, credit_lines, planned_fields, term_totals, write_line,
)
from ledger_engine.domain.commands.money.budgets import BUDGET_ASSET, load_budget
from ledger_engine.domain.commands.money.freeze import recipient_order
from ledger_engine.domain.commands.money.lines import load_line, move_budget, set_line_status
from ledger_engine.domain.commands.money.lifecycle import load
from ledger_engine.domain.day_lines import day_line_id, is_day_line, remainder_line_id
from ledger_engine.domain.schema.streaming import RightsVersion, Work, node_key, rights_key, work_key
from ledger_engine.domain.invariants import is_freeze_sentinel, require_conserved
from ledger_engine.domain.postings import Line, credit, debit, post
from ledger_engine.domain.provenance import created
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.schema.money_allocation import (
    AllocationLine, AllocationSentinel, BudgetTerm, CorrectionRequest, DayLineArtifact, allocation_sentinel_key,
    budget_refund_key, correction_key, correction_request_key, line_key, unfrozen_sentinel_key,
)
from ledger_engine.domain.schema.money_payouts import recipient_key
from ledger_engine.domain.types import Count, Digest, Identifier
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE, UNIQUE
from ledger_engine.open_json import CommandResult, RecordData, Unvalidated

REQUEST_HASH_DOMAIN = "porto:london:correction-request:v1\n"

Reason = Literal[
    "rights_error",  # lines went to the wrong rights holders or splits
    "evidence_rejected",  # listening or serving evidence was rejected after allocation
    "operator_error",  # lines went to the wrong node or operator
    "subscription_refund",  # the subscription was refunded; its units leave the budget
    "allocation_error",  # any other allocation mistake, described in the linked review
]
DeclineReason = Literal["evidence_insufficient", "amounts_disputed", "requested_in_error", "superseded"]


class QuotedLine(Payload):
    """A line as allocation plans it (``allocation.planned_fields``): a replacement's, or an artifact line's."""

    role: Literal["artist", "operator", "porto"]
    amount: Amount = Field(gt=0)
    recipient_id: Identifier | None = None
    work_id: Identifier | None = None
    rights_version: Annotated[Count, Field(ge=1)] | None = None
    node_id: Identifier | None = None

    @model_validator(mode="after")
    def _fields_of_role(self) -> "QuotedLine":
        present = {name for name in ("recipient_id", "work_id", "rights_version", "node_id")
                   if getattr(self, name) is not None}
        needed = {ARTIST: {"recipient_id", "work_id", "rights_version"}, OPERATOR: {"recipient_id", "node_id"},
                  PORTO: set()}[self.role]
        if present != needed:
            raise ValueError(f"a {self.role} line has exactly {sorted(needed) or 'no references'}")
        return self

    def planned(self) -> PlannedLine:
        return PlannedLine(self.role, self.recipient_id, self.amount, work_id=self.work_id,
                           rights_version=self.rights_version, node_id=self.node_id)


class Replacement(QuotedLine):
    line_id: Identifier


class FrozenListenerDay(Payload):
    """A frozen listener-day: the chunk it was frozen in, and its line of that chunk's artifact, quoted."""

    chunk: Count
    hash: Digest  # the chunk's SHA-256, cited in the envelope's evidence_hashes
    listener_id: Identifier
    day: Count
    budget_id: Identifier
    amount: Amount = Field(gt=0)
    revisions: dict[str, Count] = Field(min_length=1, max_length=3)
    lines: list[QuotedLine] = Field(min_length=1, max_length=MAX_LINES)

    def artifact(self) -> DayLineArtifact:
        return {"day": self.day, "chunk": self.chunk, "hash": self.hash}

    def name(self) -> str:
        return f"listener-day {self.listener_id}/{self.day}"


def quoted_line_bytes(quoted: Unvalidated) -> bytes:
    """The artifact line a ``frozen_listener_day`` quotes, as its chunk holds it: one of the chunk's lines."""
    listener_day = FrozenListenerDay.model_validate(quoted)
    return engine_bytes({
        "listener_id": listener_day.listener_id, "day": listener_day.day, "budget_id": listener_day.budget_id,
        "amount": format_amount(listener_day.amount), "revisions": listener_day.revisions,
        "lines": [planned_fields(line.planned()) for line in listener_day.lines],
    }) + b"\n"


class RequestCorrectionPayload(Payload):
    correction_id: Identifier
    budget_id: Identifier
    reason: Reason
    reverses: list[Identifier] = Field(default=[], max_length=MAX_LINES)
    replacements: list[Replacement] = Field(default=[], max_length=MAX_LINES)
    remainder_to: Literal["unallocated", "refund"] = "unallocated"
    refund_unallocated: Amount = 0
    frozen_listener_day: FrozenListenerDay | None = None

    @field_validator("reverses")
    @classmethod
    def _sorted_distinct(cls, reverses: list[str]) -> list[str]:
        if reverses != sorted(set(reverses)):
            raise ValueError("reversed line IDs must be distinct and in ID order")
        return reverses

    @model_validator(mode="after")
    def _does_something(self) -> "RequestCorrectionPayload":
        if self.frozen_listener_day is not None:
            if self.reverses:
                raise ValueError("a frozen listener-day's correction reverses its parts of day lines, no line by ID")
            if self.frozen_listener_day.budget_id != self.budget_id:
                raise ValueError("a frozen listener-day is corrected in its own budget")
        elif not self.reverses and (self.replacements or not self.refund_unallocated):
            raise ValueError("a correction reverses lines (and may replace them) or refunds unallocated units")
        new_ids = [replacement.line_id for replacement in self.replacements]
        if len(set(new_ids)) != len(new_ids) or set(new_ids) & set(self.reverses):
            raise ValueError("replacement line IDs must be new and distinct")
        return self


class DecideCorrectionPayload(Payload):
    correction_id: Identifier
    request_hash: Digest
    action: Literal["approve", "decline"]
    decline_reason: DeclineReason | None = None

    @model_validator(mode="after")
    def _reason_when_declined(self) -> "DecideCorrectionPayload":
        if (self.decline_reason is not None) != (self.action == "decline"):
            raise ValueError("a decline, and only a decline, gives its reason")
        return self


request_key = correction_request_key


def request_hash(frozen: RecordData) -> str:
    return domain_hash(REQUEST_HASH_DOMAIN, frozen)


@dataclass(frozen=True)
class Reversal:
    """What a correction takes back: named lines of its budget whole, or a frozen listener-day's part of each of
    the day lines it is in. ``lines`` are those lines as they are now; ``taken`` what is taken from each."""

    lines: list[AllocationLine]
    taken: list[PlannedLine]

    @property
    def amount(self) -> int:
        return checked_sum(part.amount for part in self.taken)


@command("RequestCorrection", payload=RequestCorrectionPayload, roles={"finance"}, cites_evidence=True)
def request_correction(ctx: RuleContext, p: RequestCorrectionPayload) -> CommandResult:
    changes = ctx.changes
    for record_key in (request_key(p.correction_id), correction_key(p.correction_id)):
        require(changes.get(STATE, record_key) is None, ErrorCode.ALREADY_EXISTS,
                f"correction {p.correction_id} already exists")
    if p.frozen_listener_day is not None:
        require(p.frozen_listener_day.hash in ctx.envelope.evidence_hashes, ErrorCode.INVALID_REFERENCE,
                "the frozen chunk's hash must be listed in the envelope's evidence_hashes")
    reversal = _reversal(changes, p)
    frozen = _frozen_request(changes, p, reversal)
    digest = request_hash(frozen)
    for line in reversal.lines:
        changes.put_state(line_key(line["line_id"]), {**line, "pending_correction": p.correction_id})
    changes.put_state(request_key(p.correction_id), {
        **frozen, "request_hash": digest, "status": "requested", "requested_by": ctx.actor_id,
        "requested_at_ms": ctx.now_ms, "decision": None, "correlation_id": f"correction:{p.correction_id}",
        "created": created(ctx),
    })
    changes.event("CorrectionRequested", correction_id=p.correction_id, budget_id=p.budget_id, reason=p.reason,
                  request_hash=digest, **frozen["amounts"])
    require_conserved(changes)
    return {"correction_id": p.correction_id, "request_hash": digest, **frozen["amounts"]}


@command("DecideCorrection", payload=DecideCorrectionPayload, roles={"finance"},
         step_up=lambda p: p.action == "approve")
def decide_correction(ctx: RuleContext, p: DecideCorrectionPayload) -> CommandResult:
    changes = ctx.changes
    request = load(changes, request_key(p.correction_id), f"correction request {p.correction_id}", CorrectionRequest)
    require(request["status"] == "requested", ErrorCode.INVALID_STATE,
            f"correction {p.correction_id} is {request['status']}: it is decided once")
    require_other_actor(ctx, request["requested_by"], "requested this correction")
    require(p.request_hash == request["request_hash"], ErrorCode.REQUEST_HASH_MISMATCH,
            f"correction {p.correction_id} was requested with hash {request['request_hash']}, not {p.request_hash}")
    decision = {"decided_by": ctx.actor_id, "decided_at_ms": ctx.now_ms, "action": p.action,
                "reason": p.decline_reason}
    status = "approved" if p.action == "approve" else "declined"
    changes.put_state(request_key(p.correction_id), {**request, "status": status, "decision": decision})
    if p.action == "decline":
        return _decline(ctx, request, p.decline_reason)
    return _post(ctx, request)


def _reversal(changes: Changes, p: RequestCorrectionPayload, correction_id: str | None = None) -> Reversal:
    """What ``p`` takes back, checked against the ledger now; ``correction_id`` once it holds its lines."""
    if p.frozen_listener_day is not None:
        return _frozen_parts(changes, p.frozen_listener_day, correction_id)
    lines = [_reversible(changes, line_id, p.budget_id, correction_id) for line_id in p.reverses]
    return Reversal(lines, _whole(lines))


def _whole(lines: Sequence[Mapping[str, Any]]) -> list[PlannedLine]:
    return [PlannedLine(line["role"], line["recipient_id"], parse_amount(line["amount"])) for line in lines]


def _frozen_request(changes: Changes, p: RequestCorrectionPayload, reversal: Reversal) -> RecordData:
    """Everything the correction will do, checked against the ledger now: what the decider approves."""
    listener_days = {(line["listener_id"], line["day"]) for line in reversal.lines if not is_day_line(line)}
    require(len(listener_days) <= 1, ErrorCode.INVALID_REFERENCE, "a correction reverses lines of one listener-day")
    for replacement in p.replacements:
        require(changes.get(STATE, line_key(replacement.line_id)) is None, ErrorCode.ALREADY_EXISTS,
                f"allocation line {replacement.line_id} already exists")
    require_payable_replacements(changes, p.replacements)
    _require_nothing_back_into_a_refunded_budget(changes, p, reversal.amount)
    unallocated = parse_amount(load_budget(changes, p.budget_id)["unallocated"])
    require(p.refund_unallocated <= unallocated, ErrorCode.INSUFFICIENT_FUNDS,
            f"budget {p.budget_id} has {unallocated} unallocated, less than the {p.refund_unallocated} to refund")
    return freeze_request(p, reversal.lines, reversal.taken)


def _require_nothing_back_into_a_refunded_budget(changes: Changes, p: RequestCorrectionPayload,
                                                 reversed_amount: int) -> None:
    if p.remainder_to != "unallocated" or changes.get(STATE, budget_refund_key(p.budget_id)) is None:
        return
    remainder = reversed_amount - checked_sum(replacement.amount for replacement in p.replacements)
    require(remainder <= 0, ErrorCode.INVALID_STATE,
            f"budget {p.budget_id} was refunded: the {remainder} this correction does not replace cannot go back "
            "into it; send it out as a refund (remainder_to: refund)")


def freeze_request(p: RequestCorrectionPayload, reversed_lines: Sequence[Mapping[str, Any]],
                   taken: list[PlannedLine] | None = None) -> RecordData:
    """The request as frozen and hashed: its lines, amounts and balancing entries (a pure function of its inputs).
    ``taken`` is what it takes from each reversed line: the whole line unless a frozen listener-day's part."""
    old = _whole(reversed_lines) if taken is None else taken
    new = [replacement.planned() for replacement in p.replacements]
    amounts = _amounts(p, old, new)
    quoted = p.frozen_listener_day
    listener_days = sorted({(line["listener_id"], line["day"]) for line in reversed_lines} if quoted is None
                           else {(quoted.listener_id, quoted.day)})
    frozen = {
        "correction_id": p.correction_id,
        "budget_id": p.budget_id,
        "reason": p.reason,
        "listener_day": list(listener_days[0]) if listener_days else None,
        "reverses": [{name: line[name] for name in ("line_id", "role", "recipient_id", "amount", "status")}
                     for line in reversed_lines],
        "replacements": [replacement.model_dump(mode="json") for replacement in p.replacements],
        "remainder_to": p.remainder_to,
        "refund_unallocated": format_amount(p.refund_unallocated),
        "amounts": {name: format_amount(amount) for name, amount in amounts.items()},
        "entries": [{"account": l.account, "side": l.side, "amount": format_amount(l.amount)}
                    for l in _entries(p.budget_id, old, new, amounts) if l.amount],
    }
    if quoted is not None:  # only then: every other request keeps the fields, bytes and hash it always had
        frozen["frozen_listener_day"] = quoted.model_dump(mode="json")
        frozen["parts"] = [{"line_id": line["line_id"], "amount": format_amount(part.amount)}
                           for line, part in zip(reversed_lines, old)]
    return frozen


def is_reversible(line: AllocationLine) -> bool:
    """A line a correction may reverse, by its status: payable, or Porto's share (paid when allocated)."""
    return line["status"] == "payable" or (line["role"] == PORTO and line["status"] == "paid")


def _reversible(changes: Changes, line_id: str, budget_id: str, correction_id: str | None = None) -> AllocationLine:
    """A line this correction may reverse: of its budget, payable (or Porto's share), under no other correction.

    Never a day line: a frozen listener-day is corrected by naming it (``frozen_listener_day``), through the
    day lines it is in."""
    line = load_line(changes, line_id)
    require(not is_day_line(line), ErrorCode.INVALID_STATE,
            f"allocation line {line_id} is a day line of day {line['day']}, not a listener-day's line: frozen "
            "listener-days are corrected through their day lines, by naming the listener-day (frozen_listener_day)")
    require(line["budget_id"] == budget_id, ErrorCode.INVALID_REFERENCE,
            f"allocation line {line_id} belongs to budget {line['budget_id']}, not {budget_id}")
    _require_reversible_now(line, correction_id)
    return line


def _require_reversible_now(line: AllocationLine, correction_id: str | None) -> None:
    """Payable, or Porto's share (paid when allocated, so nothing left the ledger), and held by no other correction.
    A reserved line waits for its payout run to be cancelled; a line paid out is never reversed."""
    line_id = line["line_id"]
    require(is_reversible(line), ErrorCode.INVALID_STATE,
            f"allocation line {line_id} is {line['status']}: only payable lines and Porto's share can be reversed")
    pending = line.get("pending_correction")
    require(pending == correction_id, ErrorCode.INVALID_STATE,
            f"allocation line {line_id} is held for correction {pending}")


def _frozen_parts(changes: Changes, quoted: FrozenListenerDay, correction_id: str | None) -> Reversal:
    """The quoted listener-day's part of each day line of its chunk, each taken from that line as it is now."""
    _require_frozen_in_chunk(changes, quoted)
    parts: dict[tuple[str, str | None], int] = defaultdict(int)
    for line in quoted.lines:
        parts[(line.role, line.recipient_id)] += line.amount
    lines, taken = [], []
    for (role, recipient_id), part in sorted(parts.items(), key=lambda item: recipient_order(*item[0])):
        day_line = _live_day_line(changes, quoted, role, recipient_id)
        _require_reversible_now(day_line, correction_id)
        require(part <= parse_amount(day_line["amount"]), ErrorCode.COUNT_MISMATCH,
                f"{quoted.name()} pays {role} {recipient_id} {part}, more than the {day_line['amount']} its day line "
                f"{day_line['line_id']} holds")
        lines.append(day_line)
        taken.append(PlannedLine(role, recipient_id, part))
    return Reversal(lines, taken)


def _require_frozen_in_chunk(changes: Changes, quoted: FrozenListenerDay) -> None:
    """The quote agrees with what the freeze recorded: the listener-day's sentinel names this chunk, budget and
    slice, and the quoted lines total the slice; no correction took the listener-day out of its freeze yet."""
    name = quoted.name()
    not_frozen = f"{name} is not frozen in chunk {quoted.chunk} of day {quoted.day} with hash {quoted.hash}"
    sentinel = require_present(changes.get(UNIQUE, allocation_sentinel_key(quoted.listener_id, quoted.day)),
                               ErrorCode.INVALID_REFERENCE, not_frozen)
    owner = sentinel.data_as(AllocationSentinel)
    require(is_freeze_sentinel(owner) and owner["artifact"] == quoted.artifact(), ErrorCode.INVALID_REFERENCE,
            not_frozen)
    require(owner["budget_id"] == quoted.budget_id, ErrorCode.INVALID_REFERENCE,
            f"{name} was frozen from budget {owner['budget_id']}, not {quoted.budget_id}")
    require(parse_amount(owner["amount"]) == quoted.amount, ErrorCode.COUNT_MISMATCH,
            f"{name}'s frozen slice is {owner['amount']}, not {quoted.amount}")
    total = checked_sum(line.amount for line in quoted.lines)
    require(total == quoted.amount, ErrorCode.COUNT_MISMATCH,
            f"{name}'s quoted lines total {total}, not its slice {quoted.amount}")
    unfrozen = changes.get(UNIQUE, unfrozen_sentinel_key(quoted.listener_id, quoted.day))
    require(unfrozen is None, ErrorCode.INVALID_STATE,
            f"{name} was taken out of its freeze by correction {unfrozen and unfrozen.data['correction_id']}: "
            "its lines are that correction's replacements, corrected by naming them")


def _live_day_line(changes: Changes, quoted: FrozenListenerDay, role: str, recipient_id: str | None) -> AllocationLine:
    """The chunk's day line for (role, recipient) live now: the freeze's, or the last remainder corrections left."""
    record = require_present(changes.get(STATE, line_key(day_line_id(quoted.day, quoted.chunk, role, recipient_id))),
                             ErrorCode.INVALID_REFERENCE,
                             f"chunk {quoted.chunk} of day {quoted.day} pays {role} {recipient_id} nothing: "
                             f"{quoted.name()}'s line is not one of the chunk's")
    line = record.data_as(AllocationLine)
    while line["status"] == "reversed":
        record = require_present(changes.get(STATE, line_key(remainder_line_id(line))), ErrorCode.COUNT_MISMATCH,
                                 f"nothing remains of {role} {recipient_id}'s day line {line['line_id']}: "
                                 f"correction {line['reversed_by']} took all of it")
        line = record.data_as(AllocationLine)
    return line


def require_payable_replacements(changes: Changes, replacements: list[Replacement]) -> None:
    """Each replacement is a line the ledger could have allocated: real references, the version's own splits."""
    by_rights: dict[tuple[str, int], dict[str, int]] = defaultdict(dict)
    for replacement in replacements:
        if replacement.role == PORTO:
            continue
        recipient_id = replacement.recipient_id
        assert recipient_id is not None, "an artist's or operator's line names its recipient (QuotedLine)"
        if replacement.role == ARTIST:
            work_id, version = replacement.work_id, replacement.rights_version
            assert work_id is not None and version is not None, "an artist line names its rights (QuotedLine)"
            shares = by_rights[(work_id, version)]
            # Two lines to one recipient would let the check see only one of them and the split be skewed.
            require(recipient_id not in shares, ErrorCode.INVALID_SPLITS,
                    f"work {work_id} version {version} names recipient {recipient_id} in two replacement lines")
            shares[recipient_id] = replacement.amount
        else:
            assert replacement.node_id is not None, "an operator line names its node (QuotedLine)"
            node = changes.get(STATE, node_key(replacement.node_id))
            require(node is not None and node.data["operator_id"] == recipient_id,
                    ErrorCode.INVALID_REFERENCE,
                    f"node {replacement.node_id} is not operated by {recipient_id}")
        require(changes.get(STATE, recipient_key(recipient_id)) is not None,
                ErrorCode.INVALID_REFERENCE, f"recipient {recipient_id} does not exist")
    for (work_id, version), shares in sorted(by_rights.items()):
        splits = _active_rights(changes, work_id, version)
        owed = {recipient: part for recipient, part in split_by_rights(checked_sum(shares.values()), splits) if part}
        require(shares == owed, ErrorCode.INVALID_SPLITS,
                f"work {work_id} version {version} splits {checked_sum(shares.values())} as {owed}, not {shares}")


def _active_rights(changes: Changes, work_id: str, version: int) -> tuple[tuple[str, int], ...]:
    record = require_present(changes.get(STATE, work_key(work_id)), ErrorCode.INVALID_REFERENCE,
                             f"work {work_id} does not exist")
    work = record.data_as(Work)
    require(work["status"] == "active" and work["rights_version"] == version, ErrorCode.INVALID_REFERENCE,
            f"work {work_id} is {work['status']} at rights version {work['rights_version']}, "
            f"not active at version {version}")
    rights_record = changes.get(STATE, rights_key(work_id, version))
    assert rights_record is not None, f"work {work_id} is active at rights version {version}, which it records"
    rights = rights_record.data_as(RightsVersion)
    return tuple((recipient["recipient_id"], recipient["split_bps"]) for recipient in rights["recipients"])


def _amounts(p: RequestCorrectionPayload, old: list[PlannedLine], new: list[PlannedLine]) -> dict[str, int]:
    """Where the reversed amount goes: replacements, back to unallocated (released), or out (refunded)."""
    reversed_amount, replaced = checked_sum(l.amount for l in old), checked_sum(l.amount for l in new)
    require(replaced <= reversed_amount, ErrorCode.INVALID_STATE,
            f"replacements total {replaced}, more than the {reversed_amount} reversed")
    remainder = reversed_amount - replaced
    released = remainder if p.remainder_to == "unallocated" else 0
    return {"reversed": reversed_amount, "replaced": replaced, "released": released,
            "refunded": remainder - released + p.refund_unallocated, "refunded_unallocated": p.refund_unallocated}


def _entries(budget_id: str, old: list[PlannedLine], new: list[PlannedLine], amounts: dict[str, int]) -> list[Line]:
    """The balancing journal ``correction:<id>``."""
    return [
        *(debit(line.account, line.amount) for line in credit_lines(old)),
        debit(budget_unallocated(budget_id), amounts["refunded_unallocated"]),
        *credit_lines(new), credit(budget_unallocated(budget_id), amounts["released"]),
        credit(CORRECTIONS, amounts["refunded"]),
    ]



def _post(ctx: RuleContext, request: CorrectionRequest) -> CommandResult:
    """Approval: the request, checked again against the ledger as it is now, posted once."""
    changes = ctx.changes
    correction_id, budget_id = request["correction_id"], request["budget_id"]
    payload = _requested_payload(request)
    reversal = _reversal(changes, payload, correction_id)
    again = _frozen_request(changes, payload, reversal)
    require(request_hash(again) == request["request_hash"], ErrorCode.STALE_REVISION,
            f"what correction {correction_id} would post changed since it was requested: request it again")
    for line in reversal.lines:
        set_line_status(changes, line["line_id"], line["status"], "reversed", reversed_by=correction_id,
                        pending_correction=None)
    frozen_fields = {} if payload.frozen_listener_day is None else _unfreeze(ctx, payload.frozen_listener_day,
                                                                             correction_id, reversal)
    listener_day = request["listener_day"]
    replaced_ids = [line["line_id"] for line in reversal.lines]
    for replacement in payload.replacements:
        assert listener_day is not None, "replacements replace a listener-day's lines (RequestCorrectionPayload)"
        write_line(changes, replacement.line_id, replacement.planned(), listener_id=listener_day[0],
                   day=listener_day[1], budget_id=budget_id, created_by=created(ctx),
                   correlation_id=f"correction:{correction_id}", correction_id=correction_id, replaces=replaced_ids)
    amounts = {name: parse_amount(amount) for name, amount in request["amounts"].items()}
    _move_terms(changes, budget_id, payload, reversal, amounts)
    post(changes, journal=f"correction:{correction_id}", asset=BUDGET_ASSET,
         lines=[Line(entry["account"], entry["side"], parse_amount(entry["amount"])) for entry in request["entries"]])
    stored = request["amounts"]
    changes.put_state(correction_key(correction_id), {
        "correction_id": correction_id,
        "budget_id": budget_id,
        "reason": request["reason"],
        "requested_by": request["requested_by"],
        "approved_by": ctx.actor_id,
        "request_hash": request["request_hash"],
        "listener_day": listener_day,
        "reverses": replaced_ids,
        "replacements": [replacement.line_id for replacement in payload.replacements],
        **stored,
        **frozen_fields,
        "recorded_at_ms": ctx.now_ms,
        "correlation_id": request["correlation_id"],
        "created": created(ctx),
    })
    changes.event("CorrectionRecorded", correction_id=correction_id, budget_id=budget_id, reason=request["reason"],
                  **stored)
    require_conserved(changes)
    return {"correction_id": correction_id, "status": "approved", **stored}


def _requested_payload(request: CorrectionRequest) -> RequestCorrectionPayload:
    """The payload a request was frozen from: a frozen listener-day's names the listener-day, others their lines."""
    frozen: Mapping[str, Any] = request
    fields = {name: frozen[name] for name in ("correction_id", "budget_id", "reason", "remainder_to", "replacements",
                                              "refund_unallocated")}
    if "frozen_listener_day" in request:
        fields["frozen_listener_day"] = request["frozen_listener_day"]
    else:
        fields["reverses"] = [line["line_id"] for line in request["reverses"]]
    return RequestCorrectionPayload.model_validate(fields)


def _unfreeze(ctx: RuleContext, quoted: FrozenListenerDay, correction_id: str, reversal: Reversal) -> CommandResult:
    """A frozen listener-day taken out of its freeze: a remainder day line for what is left of each day line it
    was in, its sentinel ``unique/unfrozen/...``, and the correction record's fields the full check reads."""
    artifact, parts = quoted.artifact(), []
    for line, part in zip(reversal.lines, reversal.taken):
        remains = parse_amount(line["amount"]) - part.amount
        remainder_id = day_line_id(quoted.day, quoted.chunk, part.role, part.recipient_id, correction_id)
        if remains:
            write_line(ctx.changes, remainder_id, PlannedLine(part.role, part.recipient_id, remains), listener_id=None,
                       day=quoted.day, budget_id=None, created_by=created(ctx),
                       correlation_id=f"correction:{correction_id}", correction_id=correction_id,
                       replaces=[line["line_id"]], artifact=artifact)
        parts.append({"role": part.role, "recipient_id": part.recipient_id, "amount": format_amount(part.amount),
                      "line_id": line["line_id"], "remainder_id": remainder_id if remains else None})
    ctx.changes.claim_unique(unfrozen_sentinel_key(quoted.listener_id, quoted.day), {"correction_id": correction_id},
                             ErrorCode.INVALID_STATE, f"{quoted.name()} was taken out of its freeze already")
    return {"unfrozen": format_amount(reversal.amount), "artifact": artifact, "parts": parts}


def _move_terms(changes: Changes, budget_id: str, payload: RequestCorrectionPayload, reversal: Reversal,
                amounts: dict[str, int]) -> None:
    """Reversals pass through ``refunds_reversals``: what is replaced or released leaves it again. A frozen
    listener-day's comes out of ``frozen``: its day lines count in no budget term."""
    taken_from: dict[BudgetTerm, int] = (term_totals(reversal.taken) if payload.frozen_listener_day is None
                                         else {"frozen": reversal.amount})
    new = [replacement.planned() for replacement in payload.replacements]
    for term, amount in sorted(taken_from.items()):
        move_budget(changes, budget_id, term, "refunds_reversals", amount)
    for term, amount in sorted(term_totals(new).items()):
        move_budget(changes, budget_id, "refunds_reversals", term, amount)
    move_budget(changes, budget_id, "refunds_reversals", "unallocated", amounts["released"])
    move_budget(changes, budget_id, "unallocated", "refunds_reversals", amounts["refunded_unallocated"])


def _decline(ctx: RuleContext, request: CorrectionRequest, reason: DeclineReason | None) -> CommandResult:
    for reversed_line in request["reverses"]:
        line = load_line(ctx.changes, reversed_line["line_id"])
        assert line.get("pending_correction") == request["correction_id"], line
        ctx.changes.put_state(line_key(line["line_id"]), {**line, "pending_correction": None})
    ctx.changes.event("CorrectionDeclined", correction_id=request["correction_id"], budget_id=request["budget_id"],
                      reason=reason)
    require_conserved(ctx.changes)
    return {"correction_id": request["correction_id"], "status": "declined"}
