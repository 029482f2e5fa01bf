"""Approved payout runs for the effects tests: the one place these tests approve a run.

Approval is four eyes (another finance user than the preparer). Everything
in tests/effects that needs approved payments comes through
``approve_run``, so a change to how a run is approved is made here only.
Their ledgers hold test-only commands, so ``porto_ledger`` runs the command
line with those commands registered: restoring one replays its history.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ledger_engine.layout import STATE
from tests.money_allocation.world import MoneyWorld, fixture_commands
from tests.support.fixture_commands import with_fixture_commands
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


def porto_ledger(*arguments: str) -> dict[str, Any]:
    """``porto-ledger`` on a ledger these tests made: its last line, once it succeeded."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "ledger_engine.cli", *arguments], capture_output=True, text=True,
                          env=with_fixture_commands(dict(os.environ), root))
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
