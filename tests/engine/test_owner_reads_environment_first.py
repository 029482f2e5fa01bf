"""An owner reads the engine's environment before it writes anything: a malformed variable refuses the open and
leaves the ledger's directory as it was, its writer generation with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger_engine.application.owner import LedgerOwner, read_writer_generation
from ledger_engine.environment import EngineEnvironment, EnvironmentRefused
from ledger_engine.genesis import default_genesis
from ledger_engine.storage.rocks import RocksStore


@pytest.fixture
def ledger(tmp_path, monkeypatch) -> Path:
    """A stopped ledger opened once, then an environment whose admission skew does not parse."""
    for name in EngineEnvironment.variables():
        monkeypatch.delenv(name, raising=False)
    data = tmp_path / "ledger"
    with LedgerOwner.open(data, genesis=default_genesis()):
        pass
    monkeypatch.setenv("PORTO_ADMISSION_SKEW_MS", "abc")
    return data


def contents(directory: Path) -> dict[str, tuple[bytes, int]]:
    """Every file below ``directory``: its bytes and when it was last written."""
    return {str(path.relative_to(directory)): (path.read_bytes(), path.stat().st_mtime_ns)
            for path in sorted(directory.rglob("*")) if path.is_file()}


def writer_generation(data: Path) -> int:
    with RocksStore(data, read_only=True) as store:
        return read_writer_generation(store)


def test_a_refused_environment_leaves_the_directory_and_its_writer_generation_as_they_were(ledger):
    generation, before = writer_generation(ledger), contents(ledger)
    with pytest.raises(EnvironmentRefused, match="PORTO_ADMISSION_SKEW_MS='abc'"):
        LedgerOwner.open(ledger)
    assert contents(ledger) == before
    assert writer_generation(ledger) == generation


def test_an_owner_given_an_open_store_refuses_before_it_advances_the_writer_generation(ledger):
    with RocksStore(ledger) as store:
        generation = read_writer_generation(store)
        with pytest.raises(EnvironmentRefused, match="PORTO_ADMISSION_SKEW_MS='abc'"):
            LedgerOwner(store)
        assert read_writer_generation(store) == generation


def test_a_refused_environment_initialises_no_ledger(tmp_path, monkeypatch):
    monkeypatch.setenv("PORTO_ADMISSION_SKEW_MS", "abc")
    with pytest.raises(EnvironmentRefused, match="PORTO_ADMISSION_SKEW_MS='abc'"):
        LedgerOwner.open(tmp_path / "ledger", genesis=default_genesis())
    assert not (tmp_path / "ledger").exists()
