"""Maintenance for workers holding the ledger's ``maintenance`` role: backups that count, on a schedule.

The backup runs in this process, the ledger owner's, because only the owner
may read the live database; the worker only asks for it.
"""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from ledger_engine.open_json import Report
from ledger_engine.selectors import account_queries
from porto_console.effects.backups import take_backup_if_due
from porto_console.internal_api.errors import ApiCode, ApiError
from porto_console.internal_api.models import WorkerCredential
from porto_console.internal_api.schemas import ERROR_RESPONSES, BackupOut, ErrorOut
from porto_console.ledger import gateway, owner, read_view

router = Router(tags=["maintenance"])

MAINTENANCE_ROLE = "maintenance"


def require_role(credential: WorkerCredential, role: str) -> None:
    """The credential's ledger actor is active and holds ``role``: the ledger's roles, not the credential's."""
    if role not in read_view(lambda view: account_queries.actor_roles(view, credential.actor_id)).data:
        raise ApiError(ApiCode.COMMAND_NOT_ALLOWED, f"worker {credential.name} acts as {credential.actor_id}, "
                                                    f"which does not hold the {role} role")


@router.post("/maintenance/backups", response={200: BackupOut, 502: ErrorOut, **ERROR_RESPONSES},
             summary="Take a backup if one is due",
             description="""\
Beat's tick. If the newest good backup is missing or older than the backup interval, backs up the live
ledger and the admission gateway's evidence and envelope stores into the configured restic repository
and answers once `restic check` passed and the new snapshot, restored, verified (`taken` true);
otherwise answers with the newest good backup (`taken` false). The worker's actor must hold the
`maintenance` role, else `COMMAND_NOT_ALLOWED`; a repository restic cannot use answers 502
`BACKUP_REPOSITORY_FAILED`.""")
def take_backup_when_due(request: HttpRequest) -> Report:
    require_role(request.auth, MAINTENANCE_ROLE)
    return take_backup_if_due(owner(), gateway().evidence.root.parent)
