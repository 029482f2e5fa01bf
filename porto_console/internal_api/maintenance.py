"""Maintenance for workers holding the ledger's ``maintenance`` role: verified backups on a schedule.

The backup runs in this process, the ledger owner's, because only the owner
may read the live database; the worker only asks for it.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja import Router

from ledger_engine.domain.actors import actor_key
from ledger_engine.layout import STATE
from porto_console.effects.backups import take_backup
from porto_console.internal_api.errors import ApiCode, ApiError
from porto_console.internal_api.models import WorkerCredential
from porto_console.internal_api.schemas import ERROR_RESPONSES, BackupOut
from porto_console.ledger import owner

router = Router(tags=["maintenance"])

MAINTENANCE_ROLE = "maintenance"


def require_role(credential: WorkerCredential, role: str) -> None:
    """The credential's ledger actor is active and holds ``role``: the ledger's roles, not the credential's."""
    actor = owner().get(STATE, actor_key(credential.actor_id))
    if actor is None or actor.data["status"] != "active" or role not in actor.data["roles"]:
        raise ApiError(ApiCode.COMMAND_NOT_ALLOWED, f"worker {credential.name} acts as {credential.actor_id}, "
                                                    f"which does not hold the {role} role")


@router.post("/maintenance/backups", response={200: BackupOut, **ERROR_RESPONSES}, summary="Take a verified backup",
             description="""\
Writes a backup of the live ledger into a new directory under the configured backup root, outside the
data directory, and answers only once every file hash has been read back against its manifest. The
worker's actor must hold the `maintenance` role, else `COMMAND_NOT_ALLOWED`.""")
def take_verified_backup(request: HttpRequest) -> dict[str, Any]:
    require_role(request.auth, MAINTENANCE_ROLE)
    return take_backup(owner(), settings.BACKUP_DIR)
