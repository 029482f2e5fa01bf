"""Serve the console under waitress (``make run``: on a labelled demo ledger; see porto_console/console/launcher.py).

PORT (default 8000), HOST (default 127.0.0.1), DATA_DIR (the ledger
directory, default var/ledger), PORTO_THREADS and PORTO_TRUSTED_PROXY come
from the environment (docs/deployment.md; every variable is in
porto_console/environment.py). Exits 2, naming the variable, when one does
not parse, and 3 when another process owns the ledger directory.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    from porto_console.environment import NotConfigured, read_environment

    try:
        environment = read_environment()
    except NotConfigured as refused:
        print(f"run_console: {refused}", file=sys.stderr)
        return 2
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "porto_console.settings")
    import django

    django.setup()
    from porto_console.console.launcher import launch

    return launch(host=environment.host, port=environment.port)


if __name__ == "__main__":
    sys.exit(main())
