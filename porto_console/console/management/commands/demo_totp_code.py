"""Print a labelled demo user's current authenticator code, for trying the demo without a phone app.

It runs on the host and reads the same secret the server checks. It refuses
anyone but the demo's own staff (their work email is at the demo's fixture
domain): a real staff member's authenticator is theirs alone.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from ledger_engine.demo.foundation import staff_email


class Command(BaseCommand):
    help = "Print the current TOTP code of a console user's authenticator."
    # Reads one row. The system checks would import every view and the ledger's modules first,
    # which was most of the command's time.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")

    def handle(self, *args, username: str, **options) -> None:
        device = TOTPDevice.objects.filter(user__username=username, confirmed=True).first()
        if device is not None and device.user.email != staff_email(username):
            raise CommandError(f"{username} is not a demo user; their authenticator is theirs alone")
        if device is None:
            raise CommandError(f"{username} has no authenticator")
        self.stdout.write(f"{TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift).token():06d}")
