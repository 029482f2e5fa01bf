"""A day's allocation artifact: listener-days split by ``london-1``, as canonical JSON lines, and their totals.

One line per listener-day, in the order given (the allocator gives listener-day
key order), each the RFC 8785 encoding of

    {"listener_id", "day", "budget_id", "amount", "revisions": {state key: revision},
     "lines": [{"role", "recipient_id", "amount", "work_id", "rights_version" | "node_id"}]}

followed by a newline. ``lines`` are exactly the lines ``AllocateListenerDay``
would write for that listener-day (``planned_fields``), in canonical output
order, ``amount`` its slice of the budget and ``revisions`` those of its
listener-day and policy records. The budget is named by the slice, not its
revision: freezing one day moves the budget's terms and not its slices, so the
next day split meanwhile is still current (a freeze checks the slice, docs/adr/0073).
The artifact's hash is
SHA-256 of its bytes, as for every stored artifact. Its values are built from
stored records, so they are encoded as the engine encodes what it builds
(``engine_bytes``, without the admission walk). Chunks of listener-days
are independent: a chunk's bytes and totals depend on nothing else, so they can
be computed on any core and joined in order (docs/adr/0069).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple

import orjson

from ledger_engine.amounts import checked_sum, format_amount, parse_amount
from ledger_engine.canonical import engine_bytes
from ledger_engine.domain.allocation_policy import PlannedLine
from ledger_engine.domain.commands.money.allocation import ListenerDayInputs, planned_fields
from ledger_engine.domain.schema.money_allocation import budget_key
from ledger_engine.open_json import Unvalidated

RecipientKey = tuple[str, str | None]  # (role, recipient ID); Porto's retained share has no recipient


@dataclass
class DayTotals:
    """What a set of listener-days allocates: per recipient and role, and per budget (each its days' slices)."""

    listener_days: int = 0
    by_recipient: dict[RecipientKey, int] = field(default_factory=lambda: defaultdict(int))
    by_budget: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    @property
    def amount(self) -> int:
        return checked_sum(self.by_budget.values())

    def merge(self, other: "DayTotals") -> None:
        self.listener_days += other.listener_days
        for recipient, amount in other.by_recipient.items():
            self.by_recipient[recipient] += amount
        for budget_id, amount in other.by_budget.items():
            self.by_budget[budget_id] += amount


class ArtifactChunk(NamedTuple):
    """Artifact lines of some listener-days, their totals, and each line's listener-day as a freeze names it."""

    content: bytes
    totals: DayTotals
    listener_days: list[Unvalidated]  # per line: listener_id, budget_id, amount (its slice), revisions


def artifact_chunk(planned: Iterable[tuple[ListenerDayInputs, list[PlannedLine]]]) -> ArtifactChunk:
    """The artifact lines of planned listener-days (each its inputs and split), in order, with their totals."""
    encoded, totals, listener_days = [], DayTotals(), []
    for inputs, lines in planned:
        assert checked_sum(line.amount for line in lines) == inputs.slice_amount, inputs
        for line in lines:
            totals.by_recipient[(line.role, line.recipient_id)] += line.amount
        totals.by_budget[inputs.budget_id] += inputs.slice_amount
        totals.listener_days += 1
        named = listener_day_named(inputs.listener_id, inputs.budget_id, format_amount(inputs.slice_amount),
                                   artifact_revisions(inputs))
        encoded.append(engine_bytes({**named, "day": inputs.day,
                                     "lines": [planned_fields(line) for line in lines]}) + b"\n")
        listener_days.append(named)
    return ArtifactChunk(b"".join(encoded), totals, listener_days)


def listener_day_named(listener_id: str, budget_id: str, amount: str, revisions: dict[str, int]) -> Unvalidated:
    """What a freeze names of an artifact line's listener-day: the fields its line and the payload share."""
    return {"listener_id": listener_id, "budget_id": budget_id, "amount": amount, "revisions": revisions}


def artifact_revisions(inputs: ListenerDayInputs) -> dict[str, int]:
    """The revisions an artifact line names: its listener-day's and the policy's, every one but its budget's."""
    budget = budget_key(inputs.budget_id)
    return {state_key: revision for state_key, revision in inputs.revisions.items() if state_key != budget}


def read_back(content: bytes) -> ArtifactChunk:
    """Artifact lines read back from their bytes (a run of a day's lines: a chunk of it), with their totals."""
    totals, listener_days = DayTotals(), []
    for encoded in content.splitlines():
        line = orjson.loads(encoded)
        for part in line["lines"]:
            totals.by_recipient[(part["role"], part["recipient_id"])] += parse_amount(part["amount"])
        totals.by_budget[line["budget_id"]] += parse_amount(line["amount"])
        totals.listener_days += 1
        listener_days.append(listener_day_named(line["listener_id"], line["budget_id"], line["amount"],
                                                line["revisions"]))
    return ArtifactChunk(content, totals, listener_days)
