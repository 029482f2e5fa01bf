"""Print the labelled demo's staff sign-ins again, as the console printed them when it made them.

It runs on the host, like the first start's printout. Only the fixture's own
staff are shown; a password its owner has since changed is not known here.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from porto_console.console.services.demo import demo_sign_ins, sign_in_lines


class Command(BaseCommand):
    help = "Print the demo staff accounts' passwords and authenticators."
    requires_system_checks: list[str] = []  # reads two tables; the URL and model checks would only slow it down

    def handle(self, *args, **options) -> None:
        sign_ins = demo_sign_ins()
        if not sign_ins:
            raise CommandError("no demo users yet: start the console with make run first")
        self.stdout.write("\n".join(sign_in_lines(sign_ins)))
