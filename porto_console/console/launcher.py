"""``make run``: own the ledger, check the keys, migrate, load the labelled demo, create demo users, serve.

One waitress process serves every request on threads
(``porto_console/operations/server.py``); there is no autoreloader, so no
second process ever tries to open the ledger. Opening the ledger comes first:
if another process owns the directory, nothing else happens. Then the keys:
outside the labelled demo the console refuses to serve with the default
``SECRET_KEY``, without a handle key of its own or without a step-up key the
ledger trusts (``safety``); the demo gets keys of its own, kept across restarts, and its fixture keys.
"""

from __future__ import annotations

import signal
import sys
from typing import TextIO

from django.conf import settings
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.management import call_command
from django.core.wsgi import get_wsgi_application

from ledger_engine.demo import demo_genesis
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.genesis import genesis_hash
from porto_console.console import safety
from porto_console.console.services import demo, staff_changes
from porto_console.effects import backups
from porto_console.ledger import close_owner, gateway, open_owner
from porto_console.operations import server

EXIT_UNSAFE = 2
EXIT_LEDGER_OWNED = 3


def launch(*, host: str, port: int, out: TextIO = sys.stdout) -> int:
    settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
    settings.LEDGER_DATA_DIR.parent.mkdir(parents=True, exist_ok=True)
    try:
        ledger = open_owner(genesis=_genesis_to_create())
    except LedgerError as error:
        if error.code == ErrorCode.LEDGER_NOT_FOUND:
            print(f"cannot start: {error.detail}, and PORTO_GENESIS_HASH names a genesis other than the demo's: "
                  "initialise the ledger from that genesis (porto-ledger init --genesis FILE) or recover it "
                  "(manage.py recover).", file=sys.stderr)
            return EXIT_UNSAFE
        if error.code != ErrorCode.LEDGER_ALREADY_OWNED:
            raise
        print(f"cannot start: {error.detail}. Stop the other console first, or set DATA_DIR "
              "to another directory.", file=sys.stderr)
        return EXIT_LEDGER_OWNED
    try:
        made = safety.prepare(ledger)
    except safety.UnsafeConfiguration as error:
        close_owner()
        print("cannot start: this is not the labelled demo ledger, and", file=sys.stderr)
        for problem in error.problems:
            print(f"  - {problem}", file=sys.stderr)
        return EXIT_UNSAFE
    signal.signal(signal.SIGTERM, _stop)
    backups_stop = backups.start_keeper(ledger, gateway().evidence.root.parent)  # one now if none is fresh
    try:
        call_command("migrate", interactive=False, verbosity=0)
        loaded = demo.load_scenario(ledger, evidence=gateway().evidence)
        print(f"ledger {settings.LEDGER_DATA_DIR}: {ledger.genesis()['label']}; "
              f"head {ledger.head().sequence}" + (f" ({loaded} demo commands loaded)" if loaded else ""), file=out)
        if made:
            print(f"DEMO DATA console: using {', '.join(made)}", file=out)
        if demo.is_demo(ledger):
            _print_users(demo.demo_users(), out)
        staff_changes.apply_approved()
        listening = server.bind(StaticFilesHandler(get_wsgi_application()), host=host, port=port)
        print(f"serving the console at http://{host}:{port}/ (one waitress process; Ctrl-C stops it)", file=out,
              flush=True)
        listening.run()
    except KeyboardInterrupt:
        pass
    finally:
        backups_stop.set()
        close_owner()
    return 0


def _stop(signum, frame) -> None:
    raise KeyboardInterrupt


def _genesis_to_create() -> dict | None:
    """The demo's genesis, for an absent or empty data directory, unless the deployment pins another one."""
    demo = demo_genesis()
    return demo if settings.GENESIS_HASH in (None, genesis_hash(demo)) else None


def _print_users(issued: list[demo.DemoSignIn], out: TextIO) -> None:
    """The labelled demo's sign-ins made at this start, on the host's terminal (never on a console screen)."""
    if issued:
        print("\nDEMO DATA users (made once; a restart keeps them):", file=out)
        print("\n".join(demo.sign_in_lines(issued)), file=out)
    else:
        print("DEMO DATA users: unchanged since they were made; .venv/bin/python manage.py demo_credentials "
              "shows them again", file=out)
    print("Current authenticator code for a demo user: .venv/bin/python manage.py demo_totp_code USERNAME\n", file=out)
