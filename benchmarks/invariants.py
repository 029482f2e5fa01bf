"""Invariant check: the full conservation check as the ledger grows to 10^4, 10^5 and 10^6 postings.

The ledger grows by allocating listener-days of the product's shape
(allocation.py). At each size it times ``CheckConservation`` (the full check
inside the executor, recording its verdict) and the same check run on the
store at a command boundary (``conservation_report``), and it measures the
allocation rate of the stretch just grown: every allocation also runs the
per-command check over the budgets it touched, whose cost must not grow with
the ledger.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import orjson

from benchmarks.allocation import MoneyLedger, check_allocated
from benchmarks.measure import seconds
from benchmarks.report import Report
from ledger_engine.layout import INDEXES
from ledger_engine.selectors.money_queries import conservation_report
from ledger_engine.storage.rocks import RocksStore

SIZES = (10**4, 10**5, 10**6)
LISTENERS, DAYS = 1_000, 30
REPEATS = 3


def posting_lines(store: RocksStore) -> int:
    """Every posting line ever journalled, from the balance projection's per-account cursors."""
    return sum(orjson.loads(raw)["postings"] for _, raw in store.scan(INDEXES, b"balance_cursor/"))


def run(report: Report, workdir: Path) -> None:
    with MoneyLedger.open(workdir / "ledger", LISTENERS, DAYS) as ledger:
        owner = ledger.owner
        for size in SIZES:
            outcomes, grow_seconds = [], 0.0
            while owner.at_boundary(posting_lines) < size and ledger.allocated_days < LISTENERS * DAYS:
                envelopes = ledger.next_allocations(min(max(10, size // 1_000), LISTENERS * DAYS - ledger.allocated_days))
                grow_seconds += seconds(lambda: outcomes.extend(ledger.allocate_envelopes(envelopes)))
            check_allocated(report, ledger, outcomes)
            postings = owner.at_boundary(posting_lines)
            report.check(postings >= size, f"the ledger grew to {postings:,} postings (target {size:,})")
            command_times, verdicts = [], []
            for repeat in range(REPEATS):
                command_times.append(seconds(lambda: verdicts.append(ledger.world.check(f"check-{size}-{repeat}"))))
            report.check(all(v.result["data"]["status"] == "clear" for v in verdicts),
                         f"at {postings:,} postings CheckConservation finds nothing")
            offline = [seconds(lambda: report.check(not owner.read(conservation_report),
                                                    f"at {postings:,} postings the store check finds nothing"))
                       for _ in range(REPEATS)]
            label = f"{size:.0e}".replace("+0", "")
            report.metric(f"postings_{label}", f"postings in the ledger (target {size:,})", postings, "postings")
            report.metric(f"check_command_s_{label}", f"CheckConservation at {postings:,} postings",
                          statistics.median(command_times), "s")
            report.metric(f"check_store_s_{label}", f"conservation_report at {postings:,} postings",
                          statistics.median(offline), "s")
            report.metric(f"allocation_rate_{label}", f"allocations per second while growing to {size:,}",
                          len(outcomes) / grow_seconds, "days/s")
        report.metric("lines", "allocation lines at the end", ledger.allocated_days * ledger.lines_per_day, "lines")
