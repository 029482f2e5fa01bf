"""A first start: ``porto-ledger init --demo`` makes the ledger ``make run`` loads, and the console serves it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.console.conftest import DEMO_SEED
from tests.console.test_launcher import ROOT, sign_in, started, with_demo_repository
from tests.engine.test_cli_init_demo import assert_same_demo_ledger, init_demo_ledger


def evidence_files(admission: Path) -> set[str]:
    return {str(path.relative_to(admission)) for path in (admission / "evidence").rglob("*") if path.is_file()}


# ``porto-ledger init --demo`` journals the whole demo (about two thousand commands); the console then starts
# as ``make run`` starts it: long end-to-end tests (docs/adr/0100).
@pytest.mark.slow
def test_init_demo_makes_the_ledger_the_console_loads_for_the_same_seed(demo_ledger_template, tmp_path):
    init_demo_ledger(tmp_path / "ledger", seed=DEMO_SEED)
    assert_same_demo_ledger(tmp_path / "ledger", demo_ledger_template)
    assert evidence_files(tmp_path / "admission") == evidence_files(demo_ledger_template.parent / "admission")


@pytest.mark.slow
def test_a_console_started_on_an_init_demo_ledger_serves_the_demo_without_loading_it_again(tmp_path,
                                                                                           initialised_repository):
    var_dir = with_demo_repository(tmp_path / "var", initialised_repository)
    made = init_demo_ledger(var_dir / "ledger", seed=1)
    console = started(var_dir)
    try:
        printed = "".join(console.output)
        assert f"head {made['sequence']}\n" in printed and "demo commands loaded" not in printed
        signed_in = sign_in(console.port, "demo-finance-2", console.password("demo-finance-2"))
        assert "DEMO DATA" in signed_in.text and "Dashboard" in signed_in.text
    finally:
        assert console.stop() == 0



def planned_setup(tmp_path: Path) -> str:
    """What ``make setup`` would run in a venv that does not exist yet, with a wheelhouse of this test's own."""
    return subprocess.run(["make", "-n", "setup", f"VENV={tmp_path / 'venv'}", f"WHEELHOUSE={tmp_path / 'wheels'}"],
                          cwd=ROOT, capture_output=True, text=True, check=True).stdout


def test_make_installs_without_byte_compiling_every_package(tmp_path):
    """pip's byte-compiling of every installed file was a third of a first install's time; Python compiles what it
    imports instead."""
    # the lock's install (from the wheelhouse, and again after filling it) and the project's, echoed and run
    installs = re.findall(r"-m pip install [^;|&]*", planned_setup(tmp_path))
    assert len(installs) == 4 and all("--no-compile" in install for install in installs)


def test_make_installs_the_lock_from_the_wheelhouse_and_fills_it_only_when_a_file_is_missing(tmp_path):
    wheels = tmp_path / "wheels"
    lock_install = next(line for line in planned_setup(tmp_path).splitlines() if "-r requirements/run.txt" in line)
    from_wheelhouse = f"--no-index --find-links {wheels} -r requirements/run.txt"
    first, fallback = lock_install.split(" || ", 1)
    assert from_wheelhouse in first and "download" not in first
    assert fallback.index(f"pip download --quiet --disable-pip-version-check -d {wheels} -r requirements/run.txt") < \
        fallback.index(from_wheelhouse)
