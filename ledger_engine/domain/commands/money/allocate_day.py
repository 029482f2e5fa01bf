"""AllocateDay and its progress: finance asks for days to be allocated, the owner records how far it got.

``AllocateDay {request_id, first_day, last_day}`` (``finance``) names a range of
at most ``MAX_REQUEST_DAYS`` UTC days and no amounts: the owner splits each day
on its workers and freezes it chunk by chunk (``application/day_freeze.py``,
docs/adr/0073). The rule records the request at
``state/day_allocation/<request_id>``, ``requested``, with one entry per day and
empty progress. A request ID is used once (``ALREADY_EXISTS``).

``RecordDayAllocationProgress`` (``ledger-owner`` only, like ``FreezeDayChunk``)
is the owner's account of a day, kept in the ledger so a restarted owner goes
on where it stopped. It names chunks the request froze, which the rule reads
back from their records (each once, and only this request's), how many
listener-days it split since (a stale chunk's again), listener-days the owner could not freeze with the code that refused
each, and whether the day is done. The request is ``running`` from its first
progress and ``done`` once every day is.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Mapping

from pydantic import Field, model_validator

from ledger_engine.amounts import format_amount, parse_amount
from ledger_engine.domain.changes import Changes, require, require_present
from ledger_engine.domain.provenance import created
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.ruleset import OWNER_ROLE
from ledger_engine.domain.schema.money_allocation import (
    DayAllocation, DayAllocationDay, DayAllocationRefusal, DayAllocationStatus, DayChunk, day_chunk_key,
)
from ledger_engine.domain.types import Count, Identifier
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import key
from ledger_engine.layout import STATE
from ledger_engine.open_json import CommandResult

MAX_REQUEST_DAYS = 31
MAX_PROGRESS_CHUNKS = 256
MAX_PROGRESS_REFUSALS = 1_000
REQUESTED: Final = "requested"
RUNNING: Final = "running"
DONE: Final = "done"


def day_allocation_key(request_id: str) -> str:
    return key("day_allocation", request_id)


class AllocateDayPayload(Payload):
    request_id: Identifier
    first_day: Count
    last_day: Count

    @model_validator(mode="after")
    def _bounded_range(self) -> "AllocateDayPayload":
        if not self.first_day <= self.last_day < self.first_day + MAX_REQUEST_DAYS:
            raise ValueError(f"last_day must be from first_day to {MAX_REQUEST_DAYS - 1} days after it")
        return self


@command("AllocateDay", payload=AllocateDayPayload, roles={"finance"})
def allocate_day(ctx: RuleContext, p: AllocateDayPayload) -> CommandResult:
    record_key = day_allocation_key(p.request_id)
    require(ctx.changes.get(STATE, record_key) is None, ErrorCode.ALREADY_EXISTS,
            f"day allocation {p.request_id} was already requested")
    days = range(p.first_day, p.last_day + 1)
    requested: DayAllocation = {
        "request_id": p.request_id, "first_day": p.first_day, "last_day": p.last_day, "status": REQUESTED,
        "requested_by": ctx.actor_id,
        "days": [{"day": day, "status": REQUESTED, "listener_days_split": 0, "listener_days_frozen": 0,
                  "amount": "0", "chunks": []} for day in days],
        "listener_days_split": 0, "listener_days_frozen": 0, "chunks_frozen": 0, "amount": "0", "refused": [],
        "correlation_id": f"day_allocation:{p.request_id}", "created": created(ctx),
    }
    ctx.changes.put_state(record_key, requested)
    ctx.changes.event("DayAllocationRequested", request_id=p.request_id, first_day=p.first_day, last_day=p.last_day)
    return {"request_id": p.request_id, "first_day": p.first_day, "last_day": p.last_day, "status": REQUESTED}


class RefusedListenerDay(Payload):
    """A listener-day of the day the owner did not freeze, and the code of the rule or bound that refused it."""

    listener_id: Identifier
    code: Annotated[str, Field(pattern=r"^[A-Z][A-Z_]{0,63}$")]
    detail: Annotated[str, Field(max_length=500)]


class RecordDayAllocationProgressPayload(Payload):
    request_id: Identifier
    day: Count
    listener_days_split: Count = 0  # listener-days split (again, for a stale chunk's) since the last progress
    chunks: list[Count] = Field(default_factory=list, max_length=MAX_PROGRESS_CHUNKS)
    refused: list[RefusedListenerDay] = Field(default_factory=list, max_length=MAX_PROGRESS_REFUSALS)
    day_done: bool = False


@command("RecordDayAllocationProgress", payload=RecordDayAllocationProgressPayload, roles={OWNER_ROLE})
def record_day_allocation_progress(ctx: RuleContext, p: RecordDayAllocationProgressPayload) -> CommandResult:
    changes = ctx.changes
    found = require_present(changes.get(STATE, day_allocation_key(p.request_id)), ErrorCode.NOT_FOUND,
                            f"no day allocation {p.request_id}")
    request = found.data_as(DayAllocation).copy()
    require(request["status"] != DONE, ErrorCode.INVALID_STATE, f"day allocation {p.request_id} is done")
    day = require_present(next((entry for entry in request["days"] if entry["day"] == p.day), None),
                          ErrorCode.INVALID_REFERENCE, f"day {p.day} is not in day allocation {p.request_id}")
    require(day["status"] != DONE, ErrorCode.INVALID_STATE, f"day {p.day} of {p.request_id} is done")
    days = [entry.copy() for entry in request["days"]]
    day = next(entry for entry in days if entry["day"] == p.day)
    for chunk in p.chunks:
        _count_chunk(changes, request, day, p.request_id, chunk)
    day["listener_days_split"] += p.listener_days_split
    request["listener_days_split"] += p.listener_days_split
    day["status"] = DONE if p.day_done else RUNNING
    status: DayAllocationStatus = DONE if all(entry["status"] == DONE for entry in days) else RUNNING
    request.update({"status": status, "days": days, "refused": _with_refusals(request["refused"], p)})
    changes.put_state(day_allocation_key(p.request_id), request)
    changes.event("DayAllocationProgressed", request_id=p.request_id, day=p.day, chunks=list(p.chunks),
                  refused=len(p.refused), day_done=p.day_done, status=status)
    return _summary(request)


def _count_chunk(changes: Changes, request: DayAllocation, day: DayAllocationDay, request_id: str, chunk: int) -> None:
    """Add a frozen chunk of this request to the day's and the request's counts, once."""
    found = require_present(changes.get(STATE, day_chunk_key(day["day"], chunk)), ErrorCode.NOT_FOUND,
                            f"chunk {chunk} of day {day['day']} is not frozen")
    frozen = found.data_as(DayChunk)
    require(frozen["request_id"] == request_id, ErrorCode.INVALID_REFERENCE,
            f"chunk {chunk} of day {day['day']} was frozen for {frozen['request_id']}, not {request_id}")
    require(chunk not in day["chunks"], ErrorCode.ALREADY_EXISTS, f"chunk {chunk} of day {day['day']} is counted")
    listener_days, amount = frozen["listener_days"], parse_amount(frozen["amount"])
    day["chunks"] = [*day["chunks"], chunk]
    day["listener_days_frozen"] += listener_days
    day["amount"] = format_amount(parse_amount(day["amount"]) + amount)
    request["chunks_frozen"] += 1
    request["listener_days_frozen"] += listener_days
    request["amount"] = format_amount(parse_amount(request["amount"]) + amount)


def _with_refusals(refused: list[DayAllocationRefusal],
                   p: RecordDayAllocationProgressPayload) -> list[DayAllocationRefusal]:
    """The request's refusals with this progress's: one entry per listener-day, the latest code for it."""
    named = {(entry["day"], entry["listener_id"]): entry for entry in refused}
    for entry in p.refused:
        named[(p.day, entry.listener_id)] = {"day": p.day, "listener_id": entry.listener_id, "code": entry.code,
                                             "detail": entry.detail}
    return [named[item] for item in sorted(named)]


def _summary(request: DayAllocation) -> CommandResult:
    fields: Mapping[str, Any] = request
    return {name: fields[name] for name in ("request_id", "status", "listener_days_split", "listener_days_frozen",
                                             "chunks_frozen", "amount")} | {"refused": len(request["refused"])}
