"""Balance reads: closest cached point plus folded tail, against folding every posting from the first.

The ledger holds allocated listener-days of the product's shape
(allocation.py). For accounts with few and with many postings it times
``balance`` (binary search over the account's numbered cached points, then the
tail after the closest one) and ``folded_balance`` (no cached point), at the
head and at a sequence halfway through, and checks the two always agree.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from benchmarks.allocation import MoneyLedger, check_allocated
from benchmarks.measure import seconds
from benchmarks.report import Report
from ledger_engine.domain.chart import PORTO_RETAINED, artist_payable, budget_unallocated
from ledger_engine.projections.money import POINT_INTERVAL
from ledger_engine.selectors.money_queries import balance, folded_balance

LISTENERS, DAYS = 200, 30
ACCOUNTS = {"porto": PORTO_RETAINED, "artist": artist_payable("artist-00"), "budget": budget_unallocated("budget-0")}
CACHED_READS, FOLDED_READS = 500, 20


def run(report: Report, workdir: Path) -> None:
    with MoneyLedger.open(workdir / "ledger", LISTENERS, DAYS) as ledger:
        check_allocated(report, ledger, ledger.allocate_envelopes(ledger.next_allocations(LISTENERS * DAYS)))
        store, head = ledger.owner.view(), ledger.owner.head().sequence
        for name, account in ACCOUNTS.items():
            for when, sequence in (("head", head), ("half", head // 2)):
                cached = balance(store, account, "USDC", at_sequence=sequence)
                report.check(cached == folded_balance(store, account, "USDC", at_sequence=sequence),
                             f"{name} at {when}: cached read equals the fold of {cached.postings:,} postings")
                with_points = statistics.median(seconds(lambda: balance(store, account, "USDC", at_sequence=sequence))
                                                for _ in range(CACHED_READS))
                without = statistics.median(seconds(lambda: folded_balance(store, account, "USDC", at_sequence=sequence))
                                            for _ in range(FOLDED_READS))
                label = f"{name} ({cached.postings:,} postings) at {when}"
                report.metric(f"{name}_{when}_cached_us", f"{label}, cached points", with_points * 1e6, "µs")
                report.metric(f"{name}_{when}_folded_us", f"{label}, no points", without * 1e6, "µs")
    report.note(f"   a cached point every {POINT_INTERVAL} postings of an account; medians of {CACHED_READS} "
                f"and {FOLDED_READS} reads")
