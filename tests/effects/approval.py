"""Approved payout runs for the effects tests: the one place these tests approve a run.

Approval is four eyes (another finance user than the preparer). Everything
in tests/effects that needs approved payments comes through
``approve_run``, so a change to how a run is approved is made here only.
"""

from __future__ import annotations

from typing import Any

from ledger_engine.layout import STATE
from tests.money_allocation.world import MoneyWorld, fixture_commands
from tests.money_payouts.world import RECIPIENTS, PayoutWorld


def approve_run(payouts: PayoutWorld, run_id: str, statement_ids: list[str]) -> None:
    outcome = payouts.approve(run_id, statement_ids)
    assert outcome.accepted, outcome


def approved_payments(stack: Any, envelopes: Any, *, runs: int = 1,
                      workers: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> list[dict[str, Any]]:
    """``runs`` approved payout runs (each paying every recipient one allocation line) and the workers' actors.

    With one run, each recipient is paid all its lines. Returns the payments.
    """
    with stack.ledger() as owner, fixture_commands():
        payouts = PayoutWorld(MoneyWorld(owner, envelopes).setup()).setup(days=max(2, runs))
        statements = payouts.confirmed_statements()
        if runs == 1:
            assert payouts.prepare("run-1").accepted
            approve_run(payouts, "run-1", statements)
        else:
            lines = {recipient: payouts.payable_line_ids(recipient) for recipient in RECIPIENTS}
            for number in range(runs):
                run_id = f"run-{number + 1}"
                assert payouts.prepare(run_id, {r: [lines[r][number]] for r in RECIPIENTS}).accepted
                approve_run(payouts, run_id, statements)
        for actor, roles in workers:
            stack.provision_worker(owner, envelopes, actor, roles)
        return [row["data"] for _, row in owner.scan(STATE, "payment/", limit=10_000)]
