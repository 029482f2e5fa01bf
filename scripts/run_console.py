"""Serve the console under waitress (``make run``: on a labelled demo ledger; see porto_console/console/launcher.py).

PORT (default 8000), HOST (default 127.0.0.1), DATA_DIR (the ledger
directory, default var/ledger), PORTO_THREADS and PORTO_TRUSTED_PROXY come
from the environment (docs/deployment.md). Exits 3 when another process owns
the ledger directory.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "porto_console.settings")
    import django

    django.setup()
    from porto_console.console.launcher import launch

    return launch(host=os.environ.get("HOST", "127.0.0.1"), port=int(os.environ.get("PORT", "8000")))


if __name__ == "__main__":
    sys.exit(main())
