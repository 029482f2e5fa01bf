"""Issue, revoke and list worker credentials for the internal API.

    manage.py worker_credentials issue signer-1 --actor signer-1 --role signer
    manage.py worker_credentials issue observer-1 --actor observer-1 --command RecordTransferObservation
    manage.py worker_credentials revoke signer-1
    manage.py worker_credentials list

Each prints one JSON object a line. ``issue`` prints the token once; only its
hash is kept, so a lost token means revoking and issuing again.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from porto_console.internal_api import credentials
from porto_console.internal_api.models import WorkerCredential


class Command(BaseCommand):
    help = "Issue, revoke and list internal API worker credentials."

    def add_arguments(self, parser: CommandParser) -> None:
        verbs = parser.add_subparsers(dest="verb", required=True)
        issue = verbs.add_parser("issue", help="issue a credential and print its token once")
        issue.add_argument("name", help="the worker's name")
        issue.add_argument("--actor", required=True, help="the ledger actor ID the worker acts as")
        issue.add_argument("--role", action="append", default=[],
                           help="allow every command type the ledger lets this role submit (repeatable)")
        issue.add_argument("--command", action="append", default=[], help="allow one command type (repeatable)")
        revoke = verbs.add_parser("revoke", help="revoke a worker's active credential")
        revoke.add_argument("name")
        verbs.add_parser("list", help="list credentials, active and revoked")

    def handle(self, *args: Any, verb: str, **options: Any) -> None:
        try:
            getattr(self, f"_{verb}")(**options)
        except credentials.CredentialError as error:
            raise CommandError(str(error)) from None

    def _issue(self, name: str, actor: str, role: list[str], command: list[str], **_: Any) -> None:
        allowed = [*command, *(t for r in role for t in credentials.commands_for_role(r))]
        credential, token = credentials.issue(name, actor, allowed)
        self._print(credential, token=token)

    def _revoke(self, name: str, **_: Any) -> None:
        self._print(credentials.revoke(name))

    def _list(self, **_: Any) -> None:
        for credential in WorkerCredential.objects.order_by("name", "created_at"):
            self._print(credential)

    def _print(self, credential: WorkerCredential, **extra: str) -> None:
        self.stdout.write(json.dumps({
            "name": credential.name,
            "actor_id": credential.actor_id,
            "command_types": credential.command_types,
            "created_at": credential.created_at.isoformat(),
            "last_used_at": credential.last_used_at and credential.last_used_at.isoformat(),
            "revoked_at": credential.revoked_at and credential.revoked_at.isoformat(),
            **extra,
        }))
