"""A first start: ``porto-ledger init --demo`` makes the ledger ``make run`` loads, and the console serves it."""

from __future__ import annotations

from pathlib import Path

from tests.console.conftest import DEMO_SEED
from tests.console.test_launcher import sign_in, started, with_demo_repository
from tests.engine.test_cli_init_demo import assert_same_demo_ledger, init_demo_ledger


def evidence_files(admission: Path) -> set[str]:
    return {str(path.relative_to(admission)) for path in (admission / "evidence").rglob("*") if path.is_file()}


def test_init_demo_makes_the_ledger_the_console_loads_for_the_same_seed(demo_ledger_template, tmp_path):
    init_demo_ledger(tmp_path / "ledger", seed=DEMO_SEED)
    assert_same_demo_ledger(tmp_path / "ledger", demo_ledger_template, DEMO_SEED)
    assert evidence_files(tmp_path / "admission") == evidence_files(demo_ledger_template.parent / "admission")


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

