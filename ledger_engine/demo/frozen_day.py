"""Demo stage 3, one day: a closed day allocated as the owner allocates a day, by a frozen artifact (docs/adr/0073).

demo-finance-1 asks for the day (``AllocateDay``); what the owner's day loop
(``application/day_freeze.py``) would journal for it follows, as the ledger's
own actor: the listener-days split, one ``FreezeDayChunk`` citing the chunk's
bytes (kept in ``builder.evidence`` for the loader to store first), the chunk
counted, and the day done with the listener-days it could not freeze and why.
The stage computes the artifact with the day allocator's own functions, so
replay and ``verify``, which split the day again from the replayed state,
accept exactly these bytes. The day is small enough for one chunk.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Sequence

from ledger_engine.application.day_allocator import Skipped
from ledger_engine.application.day_freeze import progress_payload
from ledger_engine.demo.builder import DemoBuilder
from ledger_engine.domain.actors import LEDGER_OWNER
from ledger_engine.domain.allocation_artifact import artifact_chunk
from ledger_engine.domain.allocation_policy import PlannedLine
from ledger_engine.domain.commands.money.allocation import ListenerDayInputs
from ledger_engine.domain.commands.money.freeze import chunk_payload
from ledger_engine.domain.day_lines import MAX_CHUNK_LISTENER_DAYS, day_line_id
from ledger_engine.domain.schema.money_allocation import DayLineArtifact

REQUESTER = "demo-finance-1"
CHUNK = 0  # the day's first and only chunk


@dataclass(frozen=True)
class DayLine:
    """A day line the freeze writes: one recipient's (or Porto's) total in one role over the chunk."""

    line_id: str
    role: str
    recipient_id: str | None
    amount: int
    artifact: DayLineArtifact


@dataclass(frozen=True)
class FrozenDay:
    request_id: str
    lines: list[DayLine]
    budgets: list[str]  # the budgets the chunk moved, each once


def freeze_day(builder: DemoBuilder, day: int, planned: Sequence[tuple[ListenerDayInputs, list[PlannedLine]]],
               refused: Sequence[Skipped]) -> FrozenDay:
    """Journal the allocation of ``day`` by a frozen chunk of its ``planned`` listener-days (in listener-day key
    order, each with its split); ``refused`` are the day's listener-days the split left out."""
    assert 0 < len(planned) <= MAX_CHUNK_LISTENER_DAYS, len(planned)
    request_id = builder.new_id()
    builder.add("AllocateDay", {"request_id": request_id, "first_day": day, "last_day": day}, actor=REQUESTER)
    chunk = artifact_chunk(planned)
    digest = hashlib.sha256(chunk.content).hexdigest()
    builder.evidence[digest] = chunk.content
    payload = chunk_payload(request_id, day, CHUNK, chunk)
    _progress(builder, request_id, day, split=len(planned))
    builder.add("FreezeDayChunk", payload, actor=LEDGER_OWNER, evidence=[digest])
    _progress(builder, request_id, day, chunks=[CHUNK])
    _progress(builder, request_id, day, refused=sorted(refused, key=lambda entry: entry.listener_id), day_done=True)
    artifact: DayLineArtifact = {"day": day, "chunk": CHUNK, "hash": digest}
    lines = [DayLine(day_line_id(day, CHUNK, total["role"], total["recipient_id"]), total["role"],
                     total["recipient_id"], int(total["amount"]), artifact) for total in payload["recipients"]]
    return FrozenDay(request_id, lines, [total["budget_id"] for total in payload["budgets"]])


def _progress(builder: DemoBuilder, request_id: str, day: int, **progress: Any) -> None:
    builder.add("RecordDayAllocationProgress", progress_payload(request_id, day, **progress), actor=LEDGER_OWNER)
