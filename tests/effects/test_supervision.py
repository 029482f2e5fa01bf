"""The supervisor setup the docs give: every long-running process is listed, runs real code, and is restarted."""

from __future__ import annotations

import configparser
import importlib.util
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UNITS = sorted((ROOT / "deploy" / "systemd").glob("*.service"))
PROCESSES = {"console", "payments", "commitments", "beat"}


def runs_real_code(command: str) -> bool:
    """``python -m module`` names an importable module; ``python path`` a file in the repository."""
    words = shlex.split(command)
    if "-m" in words:
        return importlib.util.find_spec(words[words.index("-m") + 1]) is not None
    return (ROOT / words[1]).is_file()


def procfile() -> dict[str, str]:
    lines = [line for line in (ROOT / "Procfile").read_text().splitlines() if line and not line.startswith("#")]
    return dict(line.split(": ", 1) for line in lines)


def test_the_procfile_lists_every_process_with_real_commands():
    entries = procfile()
    assert PROCESSES <= set(entries)
    assert all(runs_real_code(command) for command in entries.values())
    assert "celery_app worker -Q payers,payments" in entries["payments"] and "celery_app beat" in entries["beat"]


@pytest.mark.parametrize("unit", UNITS, ids=lambda path: path.name)
def test_every_systemd_unit_restarts_its_process_whatever_the_exit(unit):
    parsed = configparser.ConfigParser(interpolation=None, strict=False)
    parsed.read_string(unit.read_text())
    assert parsed["Service"]["Restart"] == "always"
    assert runs_real_code(parsed["Service"]["ExecStart"].replace("/opt/porto/", ""))


def test_there_is_a_unit_for_the_console_the_workers_and_beat():
    assert {"porto-console.service", "porto-worker@.service", "porto-beat.service"} <= {unit.name for unit in UNITS}


def test_supervisord_restarts_every_program():
    parsed = configparser.ConfigParser(interpolation=None)
    parsed.read(ROOT / "deploy" / "supervisord.conf")
    programs = [section for section in parsed.sections() if section.startswith("program:")]
    assert {"program:porto-console", "program:porto-payments", "program:porto-beat"} <= set(programs)
    for program in programs:
        assert parsed[program]["autorestart"] == "true"
        assert runs_real_code(parsed[program]["command"].replace("/opt/porto/", ""))
