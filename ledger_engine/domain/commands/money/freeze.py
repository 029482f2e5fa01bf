"""FreezeDayChunk: one chunk of a day's allocation artifact frozen into day lines (docs/adr/0073).

Only the ledger's owner submits it, as its own actor (``actors.LEDGER_OWNER``),
after it has split the day on its workers (``application/day_allocator.py``)
and stored the chunk's bytes as evidence: the gateway and the internal API
refuse it from anyone else. The payload names the request the chunk belongs
to, the day, the chunk's number in it, its SHA-256 and size (cited evidence),
each listener-day with its slice and the revisions of its listener-day and
policy as the artifact's line names them, the chunk's totals per (role,
recipient) and per budget, and its listener-day count (at most
``MAX_CHUNK_LISTENER_DAYS``). The rule does not split again; it

- checks every listener-day's revisions: a stale one refuses the whole chunk
  with ``STALE_REVISION``, and the owner reads and splits those again;
- checks each listener-day allocatable and its slice funded, as
  ``AllocateListenerDay`` does before its split, its slice the one the split
  was made for (else ``STALE_REVISION``: its budget's funding changed since),
  and the chunk's budget totals against those slices. The budget's revision is
  not checked: the freeze of another day moves the budget's terms, never its
  slices, so the owner splits a day while it freezes the one before;
- claims each listener-day's allocation sentinel, the one
  ``AllocateListenerDay`` claims, so a listener-day is allocated by exactly one
  path; moves each slice from its budget's ``unallocated`` to ``frozen``;
  writes one day line per (role, recipient) with its derived ID; posts one
  credit per recipient account, as allocation does:

      Dr budget_unallocated:<budget>...   Cr artist_payable:<recipient>...
                                          Cr operator_payable:<operator>...
                                          Cr porto_retained

- records the chunk at ``state/day_chunk/<seq20(day)>/<seq20(chunk)>`` with its
  hash, size, request, listener-day count and totals, which the full check
  holds its day lines to (``invariants.ledger_mismatches``); then
  ``require_conserved``.

Whether the totals are the split of those listener-days is for replay and
``verify``, which recompute the chunk from the replayed state.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Iterable, Iterator, Sequence

from pydantic import Field, model_validator

from ledger_engine.amounts import Amount, checked_sum, format_amount
from ledger_engine.canonical import MAX_SAFE_INTEGER
from ledger_engine.domain.allocation_policy import PORTO, PlannedLine
from ledger_engine.domain.changes import Changes, Rejected, require
from ledger_engine.domain.chart import budget_unallocated
from ledger_engine.domain.commands.money.allocation import (
    POLICY_KEY, allocatable_day, already_allocated, credit_lines, require_slice_funded, write_line,
)
from ledger_engine.domain.commands.money.budgets import BUDGET_ASSET
from ledger_engine.domain.commands.money.lines import move_budget
from ledger_engine.domain.day_lines import MAX_CHUNK_LISTENER_DAYS, day_line_id
from ledger_engine.domain.invariants import require_conserved
from ledger_engine.domain.postings import debit, post
from ledger_engine.domain.provenance import created
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.ruleset import OWNER_ROLE
from ledger_engine.domain.schema.money_allocation import (
    Created, DayLineArtifact, LineRole, allocation_sentinel_key, day_chunk_key,
)
from ledger_engine.domain.schema.streaming import listener_day_key
from ledger_engine.domain.types import Count, Digest, Identifier
from ledger_engine.domain.view import Record, StateView
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE
from ledger_engine.open_json import CommandResult, RecordData, Unvalidated

if TYPE_CHECKING:  # the artifact module imports the allocation rule, so this package, which imports this module
    from ledger_engine.domain.allocation_artifact import ArtifactChunk

class ChunkListenerDay(Payload):
    """A listener-day of the chunk, with its slice and the revisions its artifact line names (listener-day, policy)."""

    listener_id: Identifier
    budget_id: Identifier
    amount: Amount
    revisions: dict[str, Count] = Field(min_length=1, max_length=2)


class RecipientTotal(Payload):
    """What the chunk pays one recipient in one role (Porto's retained share: no recipient)."""

    role: LineRole
    recipient_id: Identifier | None
    amount: Amount = Field(gt=0)

    @model_validator(mode="after")
    def _porto_has_no_recipient(self) -> "RecipientTotal":
        if (self.role == PORTO) != (self.recipient_id is None):
            raise ValueError("Porto's share, and only Porto's, has no recipient")
        return self


class BudgetTotal(Payload):
    """What the chunk's listener-days of one budget move from its ``unallocated`` to ``frozen``."""

    budget_id: Identifier
    amount: Amount = Field(gt=0)


class FreezeDayChunkPayload(Payload):
    request_id: Identifier
    day: Count
    chunk: Count
    hash: Digest
    size: Annotated[int, Field(ge=1, le=MAX_SAFE_INTEGER)]
    listener_day_count: Annotated[int, Field(ge=1, le=MAX_CHUNK_LISTENER_DAYS)]
    listener_days: list[ChunkListenerDay] = Field(min_length=1, max_length=MAX_CHUNK_LISTENER_DAYS)
    recipients: list[RecipientTotal] = Field(min_length=1)
    budgets: list[BudgetTotal] = Field(min_length=1, max_length=MAX_CHUNK_LISTENER_DAYS)

    @model_validator(mode="after")
    def _in_artifact_order(self) -> "FreezeDayChunkPayload":
        day_keys = [listener_day_key(listener_day.listener_id, self.day) for listener_day in self.listener_days]
        if day_keys != sorted(set(day_keys)):
            raise ValueError("listener-days must be distinct and in listener-day key order, as in the artifact")
        recipients = [recipient_order(total.role, total.recipient_id) for total in self.recipients]
        if recipients != sorted(set(recipients)):
            raise ValueError("recipient totals must be distinct and sorted by role, then recipient")
        budgets = [total.budget_id for total in self.budgets]
        if budgets != sorted(set(budgets)):
            raise ValueError("budget totals must be distinct and sorted by budget")
        return self


def recipient_order(role: str, recipient_id: str | None) -> tuple[str, str]:
    return role, recipient_id or ""


def chunk_payload(request_id: str, day: int, chunk: int, artifact: ArtifactChunk) -> Unvalidated:
    """The ``FreezeDayChunk`` payload of one run of a day's artifact lines (``allocation_artifact``): its
    listener-days as its lines name them, its totals in the payload's order."""
    totals = artifact.totals
    return {
        "request_id": request_id, "day": day, "chunk": chunk, "hash": hashlib.sha256(artifact.content).hexdigest(),
        "size": len(artifact.content), "listener_day_count": len(artifact.listener_days),
        "listener_days": artifact.listener_days,
        "recipients": [{"role": role, "recipient_id": recipient_id, "amount": format_amount(amount)}
                       for (role, recipient_id), amount in sorted(totals.by_recipient.items(),
                                                                  key=lambda item: recipient_order(*item[0]))
                       if amount > 0],
        "budgets": [{"budget_id": budget_id, "amount": format_amount(amount)}
                    for budget_id, amount in sorted(totals.by_budget.items())],
    }


@dataclass(frozen=True)
class FrozenSlice:
    """One listener-day's slice of its budget, frozen."""

    listener_id: str
    budget_id: str
    amount: int


@command("FreezeDayChunk", payload=FreezeDayChunkPayload, roles={OWNER_ROLE}, cites_evidence=True)
def freeze_day_chunk(ctx: RuleContext, p: FreezeDayChunkPayload) -> CommandResult:
    changes = ctx.changes
    require(p.hash in ctx.envelope.evidence_hashes, ErrorCode.INVALID_REFERENCE,
            "the chunk's hash must be listed in the envelope's evidence_hashes: its bytes are stored first")
    require(len(p.listener_days) == p.listener_day_count, ErrorCode.COUNT_MISMATCH,
            f"the chunk counts {p.listener_day_count} listener-days but names {len(p.listener_days)}")
    require(changes.get(STATE, day_chunk_key(p.day, p.chunk)) is None, ErrorCode.ALREADY_EXISTS,
            f"chunk {p.chunk} of day {p.day} is already frozen")
    checks = _ReadOnce(changes)  # nothing is written until every listener-day is checked
    for listener_day in p.listener_days:
        _require_current(checks, p.day, listener_day)
    slices = []
    for listener_day in p.listener_days:
        checked = allocatable_day(checks, listener_day.listener_id, p.day, listener_day.budget_id)
        require(checked.slice_amount == listener_day.amount, ErrorCode.STALE_REVISION,
                f"listener-day {listener_day.listener_id}/{p.day} was split for a slice of {listener_day.amount}, "
                f"budget {listener_day.budget_id}'s funding now gives it {checked.slice_amount}")
        require_slice_funded(checked.budget, listener_day.budget_id, checked.slice_amount)
        slices.append(FrozenSlice(listener_day.listener_id, listener_day.budget_id, checked.slice_amount))
    by_budget = slice_totals(slices)
    stated = {total.budget_id: total.amount for total in p.budgets}
    if stated != by_budget:
        raise Rejected(ErrorCode.COUNT_MISMATCH, "the chunk's budget totals are not the slices of its listener-days: "
                                                 f"{_first_difference(stated, by_budget)}")
    journal = f"freeze:{p.day}:{p.chunk}"
    artifact: DayLineArtifact = {"day": p.day, "chunk": p.chunk, "hash": p.hash}
    lines = [PlannedLine(total.role, total.recipient_id, total.amount) for total in p.recipients]
    line_ids = freeze_chunk(changes, artifact, slices, lines, journal=journal, created_by=created(ctx), chunk_record={
        "request_id": p.request_id, "size": p.size})
    amount = format_amount(checked_sum(by_budget.values()))
    changes.event("DayChunkFrozen", request_id=p.request_id, day=p.day, chunk=p.chunk, hash=p.hash,
                  listener_days=p.listener_day_count, amount=amount, line_ids=line_ids)
    require_conserved(changes)
    return {"request_id": p.request_id, "day": p.day, "chunk": p.chunk, "hash": p.hash,
            "listener_days": p.listener_day_count, "amount": amount, "line_ids": line_ids}


class _ReadOnce:
    """A view of the command's changes that decodes each record once: a chunk's checks read every listener-day,
    budget and period twice, and write nothing while they do."""

    def __init__(self, changes: Changes) -> None:
        self.changes = changes
        self.records: dict[tuple[str, str], Record | None] = {}

    def get(self, family: str, key: str) -> Record | None:
        address = (family, key)
        if address not in self.records:
            self.records[address] = self.changes.get(family, key)
        return self.records[address]

    def scan(self, family: str, prefix: str) -> Iterator[tuple[str, Record]]:
        return self.changes.scan(family, prefix)


def _require_current(view: StateView, day: int, listener_day: ChunkListenerDay) -> None:
    """The chunk was split from these records as they are now: each revision its artifact line names is current."""
    named = {listener_day_key(listener_day.listener_id, day), POLICY_KEY}
    require(set(listener_day.revisions) == named, ErrorCode.INVALID_REFERENCE,
            f"listener-day {listener_day.listener_id}/{day} must name the revisions of exactly {sorted(named)}")
    for state_key, expected in sorted(listener_day.revisions.items()):
        record = view.get(STATE, state_key)
        actual = record.revision if record is not None else None
        require(actual == expected, ErrorCode.STALE_REVISION,
                f"{state_key}: the chunk was split at revision {expected}, it is now {actual}")


def slice_totals(slices: Iterable[FrozenSlice]) -> dict[str, int]:
    by_budget: dict[str, int] = defaultdict(int)
    for frozen in slices:
        by_budget[frozen.budget_id] += frozen.amount
    return dict(by_budget)


def _first_difference(stated: dict[str, int], computed: dict[str, int]) -> str:
    budget_id = min(budget for budget in stated.keys() | computed.keys() if stated.get(budget) != computed.get(budget))
    return f"budget {budget_id}: stated {stated.get(budget_id, 0)}, its listener-days' slices {computed.get(budget_id, 0)}"


def freeze_chunk(changes: Changes, artifact: DayLineArtifact, slices: Sequence[FrozenSlice],
                 lines: Sequence[PlannedLine], *, journal: str, created_by: Created,
                 chunk_record: RecordData) -> list[str]:
    """A chunk's effects, whoever checked it: each listener-day's sentinel claimed (naming the chunk) and its slice
    moved from ``unallocated`` to ``frozen``, one day line per (role, recipient) of ``lines`` with its derived ID,
    the postings, and the chunk's record (its ``chunk_record`` fields, its totals and listener-day count).
    ``lines`` hold one total per (role, recipient); they total the slices. Returns the day lines' IDs."""
    day, chunk = artifact["day"], artifact["chunk"]
    for frozen in slices:
        changes.claim_unique(allocation_sentinel_key(frozen.listener_id, day),
                             {"budget_id": frozen.budget_id, "amount": format_amount(frozen.amount),
                              "artifact": artifact},
                             ErrorCode.ALREADY_ALLOCATED, already_allocated(frozen.listener_id, day))
        move_budget(changes, frozen.budget_id, "unallocated", "frozen", frozen.amount)
    by_budget = slice_totals(slices)
    total = checked_sum(by_budget.values())
    require(total == checked_sum(line.amount for line in lines), ErrorCode.COUNT_MISMATCH,
            f"the day lines must total the frozen listener-days' {total}")
    recipients, line_ids = [], []
    for line in lines:
        line_id = day_line_id(day, chunk, line.role, line.recipient_id)
        write_line(changes, line_id, line, listener_id=None, day=day, budget_id=None, created_by=created_by,
                   correlation_id=journal, artifact=artifact)
        recipients.append({"role": line.role, "recipient_id": line.recipient_id,
                           "amount": format_amount(line.amount), "line_id": line_id})
        line_ids.append(line_id)
    post(changes, journal=journal, asset=BUDGET_ASSET,
         lines=[*(debit(budget_unallocated(budget_id), amount) for budget_id, amount in sorted(by_budget.items())),
                *credit_lines(list(lines))])
    changes.put_state(day_chunk_key(day, chunk), {
        **artifact, **chunk_record, "listener_days": len(slices), "amount": format_amount(total),
        "recipients": recipients,
        "budgets": [{"budget_id": budget_id, "amount": format_amount(amount)}
                    for budget_id, amount in sorted(by_budget.items())],
        "correlation_id": journal, "created": created_by,
    })
    return line_ids
