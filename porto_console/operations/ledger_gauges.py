"""Gauges computed at scrape time from the owner and its projections: nothing is kept between scrapes.

Halted, head, dispatch and backup come from the health probe, who paused dispatch from the owner; the outbox
backlog, payments by state and payments overdue in flight are index scans read between two commands
(``read_view``), skipped while the ledger is halted, since its store
is then not to be trusted; quarantine size counts the quarantine's entries.
"""

from __future__ import annotations

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ledger_engine.errors import LedgerError
from ledger_engine.selectors.payout_queries import outbox_backlog, overdue_payments, payment_counts
from porto_console.console.services.quarantine import quarantine
from porto_console import ledger
from porto_console.ledger import read_view
from porto_console.operations import health

# Why dispatch is paused: a person's journalled PauseDispatch, or a restored ledger not yet promoted.
PAUSED_BY_DECISION, RECONCILIATION_OWED = "decision", "reconciliation_owed"


class LedgerGauges(Collector):
    def collect(self):
        found = health.probe()
        yield _gauge("porto_ledger_halted", "1 while the ledger admits nothing until its owner is reopened",
                     int(found.halt_cause is not None))
        yield _gauge("porto_ledger_head_sequence", "Sequence of the newest journal entry", found.sequence)
        yield _gauge("porto_quarantined_effects", "Effects parked for an operator", len(quarantine().entries()))
        yield from _backup_gauges(found)
        if found.halt_cause is None:
            yield _gauge("porto_dispatch_enabled", "1 while workers may carry out effects",
                         int(bool(found.dispatch_enabled)))
            yield from _dispatch_pause()
            yield from _projection_gauges()

    def describe(self):
        return []  # nothing to describe ahead of a scrape: the families are read from the ledger then


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _backup_gauges(found: health.Probe):
    yield _gauge("porto_backup_overdue", "1 when no good backup was taken within five minutes",
                 int(found.backup_overdue))
    age_s = found.backup.age_s(health.now_ms())
    if found.backup.sequence is not None and age_s is not None:
        yield _gauge("porto_backup_age_seconds", "Age of the newest good backup", age_s)
        yield _gauge("porto_backup_sequence", "Ledger sequence the newest good backup holds", found.backup.sequence)


def _dispatch_pause():
    """Who holds dispatch paused, as labels: the actor whose journalled pause holds, or a reconciliation the
    ledger owes after a restore. Never the stated reason, which is free text: the dashboard shows it."""
    try:
        state = ledger.owner().dispatch_state()
    except LedgerError:  # halted since the probe
        return
    paused = GaugeMetricFamily("porto_dispatch_paused_info", "1 while dispatch is paused, with who or what holds it",
                               labels=["paused_by", "cause"])
    if state["reconciliation_owed"] is not None:
        paused.add_metric(["", RECONCILIATION_OWED], 1)
    if state["paused_by"] is not None:
        paused.add_metric([state["paused_by"], PAUSED_BY_DECISION], 1)
    yield paused


def _projection_gauges():
    try:
        read = read_view(lambda view: (outbox_backlog(view), payment_counts(view),
                                       overdue_payments(view, health.now_ms())))
    except LedgerError:  # halted since the probe: the other families still go out
        return
    backlog, payments, overdue = read.data
    outbox = GaugeMetricFamily("porto_outbox_effects", "Outbox effects by status and kind", labels=["status", "kind"])
    for status, kinds in backlog.items():
        for kind, count in kinds.items():
            outbox.add_metric([status, kind], count)
    yield outbox
    by_state = GaugeMetricFamily("porto_payments", "Payments by state", labels=["state"])
    for state, count in payments.items():
        by_state.add_metric([state], count)
    yield by_state
    yield _gauge("porto_payments_overdue",
                 "Payments in flight more than ten minutes past their transaction's expiry", overdue)
