"""The demo's money stage: every closed day allocated exactly, one addition, one correction, a clean check.

The streaming stage's output (cleared periods and closed listener-days) is
stood in for by ``TestStreamingRecords`` envelopes and the matching cast fields.
"""

from __future__ import annotations

import random

import pytest

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.demo import demo_genesis
from ledger_engine.demo import money as money_stage
from ledger_engine.demo import payouts as payout_stage
from ledger_engine.demo.builder import DAY_MS, DEMO_EPOCH_MS, DemoBuilder
from ledger_engine.demo.foundation import ADMIN, build_foundation
from tests.money_allocation.oracle import conservation_problems
from tests.money_allocation.world import fixture_commands

LISTENERS, DAYS = 5, 3


def streaming_stand_in(builder: DemoBuilder, cast) -> None:
    """Cleared periods and closed days, recorded on the cast the way the streaming stage will."""
    rng = random.Random(11)
    cast.rights = {e["payload"]["work_id"]: e["payload"]["rights"] for e in builder.envelopes
                   if e["command_type"] == "ActivateWork"}
    first_day = DEMO_EPOCH_MS // DAY_MS
    cast.periods = [{"period_id": f"demo-period-{n}", "account_id": listener, "start_ms": DEMO_EPOCH_MS,
                     "end_ms": DEMO_EPOCH_MS + 30 * DAY_MS, "days": 30, "clearance": "cleared", "entitlement": "active",
                     "provider": "demo-pay", "provider_period_id": f"demo-pay-period-{n}"}
                    for n, listener in enumerate(cast.listeners)]
    cast.closed_days = []
    for n, listener in enumerate(cast.listeners):
        for day in range(first_day, first_day + DAYS):
            works = sorted(rng.sample([w["work_id"] for w in cast.works], k=3 if (n, day) != (0, first_day) else 0))
            nodes = sorted(rng.sample(["demo-node-1", "demo-node-2", "demo-node-3"], k=rng.randint(0, 2)))
            cast.closed_days.append({
                "listener_id": listener, "day": day, "period_id": f"demo-period-{n}",
                "works": [{"work_id": w, "rights_version": 1, "listened_ms": rng.randint(0, 200_000)} for w in works],
                "nodes": [{"node_id": node, "operator_id": "demo-operator", "served_bytes": rng.randint(1, 10**7)}
                          for node in nodes]})
    builder.add("TestStreamingRecords", {"periods": cast.periods, "days": cast.closed_days}, actor=ADMIN)


@pytest.fixture
def scenario(monkeypatch):
    handed_over = []
    monkeypatch.setattr(payout_stage, "build_payouts", lambda builder, cast, allocation: handed_over.append(allocation))
    builder = DemoBuilder(5)
    cast = build_foundation(builder, listeners=LISTENERS, days=DAYS)
    streaming_stand_in(builder, cast)
    money_stage.build_money(builder, cast, days=DAYS)
    return builder, cast, handed_over


def test_the_money_stage_commits_conserves_and_hands_payable_lines_over(scenario, tmp_path):
    builder, cast, handed_over = scenario
    with fixture_commands(), LedgerOwner.open(tmp_path / "ledger", genesis=demo_genesis()) as owner:
        outcomes = [owner.submit(envelope) for envelope in builder.envelopes]
        assert [(o.code, e["command_type"]) for o, e in zip(outcomes, builder.envelopes) if not o.accepted] == []
        types = {e["command_type"] for e in builder.envelopes}
        assert {"ImportFunding", "AllocateListenerDay", "RequestCorrection", "DecideCorrection",
                "ApplyBillingObservation", "CheckConservation"} <= types
        assert outcomes[-1].result["data"]["status"] == "clear"
        assert conservation_problems(owner) == []

        (allocation,) = handed_over
        eligible = [d for d in cast.closed_days if sum(w["listened_ms"] for w in d["works"])]
        for day in eligible:
            assert owner.get("unique", f"allocation/{day['listener_id']}/{day['day']:020d}") is not None
        for line in allocation.payable:
            record = owner.get("state", f"allocation_line/{line.line_id}").data
            assert (record["status"], record["recipient_id"], int(record["amount"])) == \
                ("payable", line.recipient_id, line.amount)
        for budget_id, revision in allocation.budget_revisions.items():
            assert owner.get("state", f"budget/{budget_id}").revision == revision
        assert len(eligible) == len(cast.closed_days) - 1  # a day without listening leaves its slice unallocated
