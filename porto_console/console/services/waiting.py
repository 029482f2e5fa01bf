"""What waits for the signed-in user, by role: the work only they (and not its maker) can do next.

Finance: runs to approve that someone else prepared, corrections and recipient updates someone else requested.
Ops: open holds and quarantined effects. Admin: staff changes another admin requested.
"""

from __future__ import annotations

from dataclasses import dataclass

from ledger_engine.selectors import correction_queries, payout_queries, staff_queries
from ledger_engine.selectors.view import LedgerView
from porto_console.console.roles import ADMIN, FINANCE, OPS


@dataclass(frozen=True)
class Waiting:
    key: str  # stable, for the page's element IDs
    title: str
    count: int
    url_name: str  # the screen where the work is done
    query: str = ""


def waiting_for(view: LedgerView, actor: str, roles: frozenset[str], *, open_holds: int,
                quarantined: int) -> list[Waiting]:
    found: list[Waiting] = []
    if FINANCE in roles:
        approvable, stale = payout_queries.prepared_runs_by_approvability(view)
        found += [
            Waiting("runs", "Runs to approve (prepared by someone else)",
                    _others(approvable, "prepared_by", actor), "console-payouts", "?status=prepared"),
            Waiting("stale-runs", "Runs to cancel (another run paid their lines first)", len(stale),
                    "console-payouts", "?status=prepared"),
            Waiting("corrections", "Corrections awaiting your check",
                    _others(correction_queries.corrections(view, "requested"), "requested_by", actor),
                    "console-corrections"),
            Waiting("recipient-updates", "Recipient updates awaiting your check",
                    _others(payout_queries.recipient_updates(view, "pending"), "requested_by", actor),
                    "console-recipients"),
        ]
    if OPS in roles:
        found += [Waiting("holds", "Open holds to decide", open_holds, "console-holds"),
                  Waiting("quarantine", "Quarantined effects", quarantined, "console-quarantine")]
    if ADMIN in roles:
        found.append(Waiting("staff-changes", "Staff changes awaiting a second admin",
                             _others(staff_queries.changes(view, "pending"), "requested_by", actor),
                             "console-staff-changes"))
    return found


def _others(items, maker_field: str, actor: str) -> int:
    """Items someone else made; a typed listing (runs, recipient updates) or a record dict (the others)."""
    return sum(1 for item in items if _maker(item, maker_field) != actor)


def _maker(item, maker_field: str) -> str | None:
    return item.get(maker_field) if isinstance(item, dict) else getattr(item, maker_field)
