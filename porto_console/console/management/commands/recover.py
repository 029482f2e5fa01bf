"""``manage.py recover``: restore the newest good backup, reconcile, print the report; dispatch stays paused."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from ledger_engine.errors import LedgerError
from porto_console.effects.recover import recover

DEFAULT_WAIT_SECS = 300  # past the workers' transaction lifetime (120 s), so anything in flight has landed or expired


class Command(BaseCommand):
    help = ("After host loss: restore the newest verified backup (ledger and evidence) from the backup repository "
            "into the empty DATA_DIR and ADMISSION_DIR, reconcile against the chain and the signed-payment journal, "
            "and print a report. Needs a payment worker's environment too. Dispatch stays paused: resume it with "
            "`porto-ledger --data DIR promote --reason ...`. Exit 1 when reconcile found discrepancies.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--last-sequence", type=int, help="the last head known before the loss")
        parser.add_argument("--wait-secs", type=float, default=DEFAULT_WAIT_SECS,
                            help="how long to keep reconciling while a transaction could still land")
        parser.add_argument("--restored", action="store_true",
                            help="the ledger was already restored (porto-ledger recover): only reconcile and report")

    def handle(self, *args, **options) -> None:
        try:
            report = recover(last_known_sequence=options["last_sequence"], wait_secs=options["wait_secs"],
                             restored=options["restored"])
        except LedgerError as error:
            raise CommandError(f"{error.code}: {error.detail}") from None
        self.stdout.write(json.dumps(report, sort_keys=True))
        if not report["safe_to_resume"]:
            raise SystemExit(1)
