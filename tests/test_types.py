"""The code's types are checked: mypy, strict over ``ledger_engine`` and checked over ``porto_console``, as
``pyproject.toml`` configures it. A function without types in the engine, or a value used as a type it may not
have, fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_finds_no_error():
    """mypy's own incremental cache (``.mypy_cache``, git-ignored) is kept between runs: a fresh clone checks every
    module, a run after a small change only what it touches."""
    checked = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout[-8_000:] + checked.stderr[-2_000:]
    assert checked.stdout.startswith("Success: no issues found"), checked.stdout
