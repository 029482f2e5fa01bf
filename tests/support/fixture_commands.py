"""Test-only commands that stand in for the streaming domain and break money on purpose.

``TestStreamingRecords`` writes periods, nodes and closed listener-days, which
the streaming workers would make; ``TestForgeRecord`` overwrites one money
record and ``TestPayoutGate`` runs the payout block check, so tests can break
conservation and watch payouts stop. ``TestDayLines`` freezes listener-days
with the freeze's own writing (docs/adr/0073, ``commands/money/freeze.py``),
with amounts the test states instead of a checked, recomputed chunk, and no
``ledger-owner`` actor. Tests register them for as long as they
need them (``fixture_commands``); a process a test starts to replay a history
made with them registers them for its life (``tests/support/fixture_site``).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Iterator, Literal

from pydantic import Field

from ledger_engine.amounts import Amount
from ledger_engine.domain import registry
from ledger_engine.domain.allocation_policy import PlannedLine
from ledger_engine.domain.commands.money.freeze import FrozenSlice, freeze_chunk
from ledger_engine.domain.invariants import require_conserved, require_payouts_unblocked
from ledger_engine.domain.provenance import created
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.schema.streaming import listener_day_key, node_key, period_key
from ledger_engine.domain.types import Count, Digest, Identifier


class FixtureWork(Payload):
    work_id: Identifier
    rights_version: Count
    listened_ms: Count


class FixtureNode(Payload):
    node_id: Identifier
    operator_id: Identifier
    served_bytes: Count


class FixturePeriod(Payload):
    period_id: Identifier
    account_id: Identifier
    start_ms: Count
    end_ms: Count
    days: Count
    entitlement: Literal["active", "cancelled"] = "active"
    clearance: Literal["pending", "cleared", "refunded"] = "cleared"
    provider: Identifier = "test-pay"
    provider_period_id: Identifier | None = None  # pp-<period_id>
    gross_gbp: str = "1199"
    net_gbp: str = "999"


class FixtureDay(Payload):
    listener_id: Identifier
    day: Count
    period_id: Identifier
    status: Literal["open", "closed"] = "closed"
    hold_free: bool = True
    works: list[FixtureWork] = []
    nodes: list[FixtureNode] = []


class FixtureNodeRecord(Payload):
    node_id: Identifier
    operator_id: Identifier


class StreamingRecordsPayload(Payload):
    periods: list[FixturePeriod] = []
    days: list[FixtureDay] = []
    nodes: list[FixtureNodeRecord] = []


def streaming_records(ctx: RuleContext, p: StreamingRecordsPayload) -> dict:
    for period in p.periods:
        ctx.changes.put_state(period_key(period.period_id), {
            **period.model_dump(mode="json"), "provider_period_id": period.provider_period_id or f"pp-{period.period_id}",
            "events": []})
    for node in p.nodes:
        ctx.changes.put_state(node_key(node.node_id), {**node.model_dump(mode="json"), "status": "active",
                                                       "endpoint": f"https://{node.node_id}.example.org:443"})
    for day in p.days:
        ctx.changes.put_state(listener_day_key(day.listener_id, day.day),
                              {**day.model_dump(mode="json"), "closed_at_ms": ctx.now_ms, "sessions": [],
                               "eligible_ms": sum(work.listened_ms for work in day.works)})
    return {}


class ForgeRecordPayload(Payload):
    record_key: str
    changes: dict[str, Any]


def forge_record(ctx: RuleContext, p: ForgeRecordPayload) -> dict:
    record = ctx.changes.get("state", p.record_key)
    ctx.changes.put_state(p.record_key, {**record.data, **p.changes})
    return {}


class PayoutGatePayload(Payload):
    note: str = ""


def payout_gate(ctx: RuleContext, p: PayoutGatePayload) -> dict:
    require_payouts_unblocked(ctx.changes)
    return {}


class FrozenListenerDay(Payload):
    listener_id: Identifier
    budget_id: Identifier
    amount: Amount = Field(gt=0)


class FixtureDayLine(Payload):
    role: Literal["artist", "operator", "porto"]
    recipient_id: Identifier | None = None  # none for Porto's share
    amount: Amount = Field(gt=0)


class DayLinesPayload(Payload):
    day: Count
    chunk: Count
    hash: Digest
    listener_days: list[FrozenListenerDay] = Field(min_length=1)
    lines: list[FixtureDayLine] = Field(min_length=1)


def day_lines(ctx: RuleContext, p: DayLinesPayload) -> dict:
    """A chunk frozen as ``FreezeDayChunk`` freezes one (``freeze.freeze_chunk``: sentinels, ``frozen``, day lines,
    postings and the chunk's record), with the slices and lines the test states instead of checked revisions and
    recomputed totals."""
    slices = [FrozenSlice(frozen.listener_id, frozen.budget_id, frozen.amount) for frozen in p.listener_days]
    lines = [PlannedLine(line.role, line.recipient_id, line.amount) for line in p.lines]
    line_ids = freeze_chunk(ctx.changes, {"day": p.day, "chunk": p.chunk, "hash": p.hash}, slices, lines,
                            journal=f"test_day_lines:{p.day}:{p.chunk}", created_by=created(ctx),
                            chunk_record={"request_id": "test-day-lines", "size": 1})
    require_conserved(ctx.changes)
    return {"line_ids": line_ids}


FIXTURES = {
    "TestStreamingRecords": (StreamingRecordsPayload, streaming_records),
    "TestForgeRecord": (ForgeRecordPayload, forge_record),
    "TestPayoutGate": (PayoutGatePayload, payout_gate),
    "TestDayLines": (DayLinesPayload, day_lines),
}


def register_fixture_commands() -> None:
    for name, (payload, rule) in FIXTURES.items():
        command(name, payload=payload, roles={"admin"})(rule)


@contextlib.contextmanager
def fixture_commands() -> Iterator[None]:
    register_fixture_commands()
    try:
        yield
    finally:
        for name in FIXTURES:
            registry._REGISTRY.pop(name)


def with_fixture_commands(env: dict[str, str], root: Path) -> dict[str, str]:
    """``env`` for a process started from ``root`` that registers the test-only commands as it starts."""
    site = Path(__file__).parent / "fixture_site"
    return {**env, "PYTHONPATH": os.pathsep.join(part for part in (str(site), str(root), env.get("PYTHONPATH")) if part)}
