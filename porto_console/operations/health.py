"""``/healthz``: whether the console's ledger admits commands, carries out effects and is backed up.

No sign-in; a small JSON body ``{"status", "conditions", "sequence",
"dispatch_enabled", "backup", "halt_cause"}`` with no secrets (no paths, no
operator text, the halt's error code only). The status code tells a load
balancer and a monitor apart what matters (docs/adr/0036):

=====  =================  ==================================================
code   status             meaning
=====  =================  ==================================================
200    ready              admits commands, dispatch on, a good backup in time
202    dispatch_paused    admits commands; their effects wait for a resume
203    backup_overdue     no good backup within five minutes
503    halted             admits nothing until the owner is reopened
503    unavailable        this process could not open the ledger
=====  =================  ==================================================

Every 2xx keeps the console in a load balancer's pool (people must reach it to
resume dispatch or see a backup); only 503 takes it out. When several hold,
the most severe names the status (halted, then backup overdue, then dispatch
paused) and ``conditions`` lists them all.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from ledger_engine.errors import LedgerError
from porto_console import ledger
from porto_console.operations.backup_status import BackupStatus, backup_status

READY, DISPATCH_PAUSED, BACKUP_OVERDUE, HALTED, UNAVAILABLE = (
    "ready", "dispatch_paused", "backup_overdue", "halted", "unavailable")
STATUS_CODES = {READY: 200, DISPATCH_PAUSED: 202, BACKUP_OVERDUE: 203, HALTED: 503, UNAVAILABLE: 503}
BY_SEVERITY = (HALTED, BACKUP_OVERDUE, DISPATCH_PAUSED)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class Probe:
    """What the console's owner looks like now; read from memory and point reads, never a scan."""

    sequence: int
    halt_cause: str | None
    dispatch_enabled: bool | None  # None when halted: a damaged store is not read
    backup: BackupStatus
    backup_overdue: bool

    @property
    def conditions(self) -> list[str]:
        held = {HALTED: self.halt_cause is not None, BACKUP_OVERDUE: self.backup_overdue,
                DISPATCH_PAUSED: self.dispatch_enabled is False}
        return [condition for condition in BY_SEVERITY if held[condition]]

    @property
    def status(self) -> str:
        return (self.conditions or [READY])[0]


def probe() -> Probe:
    owner = ledger.owner()
    cause = owner.halt_cause()
    backup = backup_status()
    at = now_ms()
    return Probe(sequence=owner.head().sequence, halt_cause=cause,
                 dispatch_enabled=None if cause else owner.dispatch_state()["enabled"], backup=backup,
                 backup_overdue=backup.overdue(at, ledger.opened_at_ms()))


@require_safe
@never_cache
def healthz(request):
    try:
        found = probe()
    except LedgerError as error:  # the owner could not be opened (or was met damaged) in this process
        return JsonResponse({"status": UNAVAILABLE, "conditions": [UNAVAILABLE], "cause": str(error.code)},
                            status=STATUS_CODES[UNAVAILABLE])
    age_s = found.backup.age_s(now_ms())
    body = {"status": found.status, "conditions": found.conditions, "sequence": found.sequence,
            "dispatch_enabled": found.dispatch_enabled, "halt_cause": found.halt_cause,
            "backup": None if found.backup.sequence is None or age_s is None else {
                "sequence": found.backup.sequence, "age_s": round(age_s, 3)}}
    return JsonResponse(body, status=STATUS_CODES[found.status])
