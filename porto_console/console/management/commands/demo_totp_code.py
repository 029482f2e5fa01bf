"""Print a demo user's current authenticator code, for trying the console without a phone app.

It reads the same secret the server checks, so it shows nothing that the
database does not already hold; real deployments enrol a real authenticator.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice


class Command(BaseCommand):
    help = "Print the current TOTP code of a console user's authenticator."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")

    def handle(self, *args, username: str, **options) -> None:
        device = TOTPDevice.objects.filter(user__username=username, confirmed=True).first()
        if device is None:
            raise CommandError(f"{username} has no authenticator")
        self.stdout.write(f"{TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift).token():06d}")
