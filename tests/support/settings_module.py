"""The console's settings module as a console started with a given environment reads it, in this process.

``porto_console/settings.py`` is a function of the environment: this runs its
source in a namespace of its own with exactly that environment in
``os.environ`` (then restores this process's), so a test reads what a fresh
console would, without starting one and without touching the settings this
test process runs on. A refusal at start is the exception the module raises.
"""

from __future__ import annotations

import os
import runpy
from pathlib import Path
from typing import Any

from django.conf import global_settings

SETTINGS = Path(__file__).resolve().parents[2] / "porto_console" / "settings.py"


def settings_under(environment: dict[str, str]) -> dict[str, Any]:
    """The settings, read under ``environment`` and nothing else: Django's defaults, then the module's names."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(environment)
    try:
        module = runpy.run_path(str(SETTINGS), run_name="porto_console.settings_under_test")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    defaults = {name: getattr(global_settings, name) for name in dir(global_settings) if name.isupper()}
    return {**defaults, **{name: value for name, value in module.items() if name.isupper()}}
