"""A damaged block is an error naming its column family and keys, never a short answer; the owner halts."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import pytest

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.errors import ErrorCode, LedgerError, StorageFault
from ledger_engine.genesis import default_genesis
from ledger_engine.layout import STATE
from ledger_engine.storage.rocks import RocksStore
from tests.conftest import EnvelopeFactory

ACCOUNTS = 3_000


def sst_holding(data: Path, marker: bytes) -> Path:
    """The one SST file whose bytes contain ``marker`` (keys are stored in the clear)."""
    found = [path for path in data.glob("*.sst") if marker in path.read_bytes()]
    assert len(found) == 1, found
    return found[0]


def flip_middle(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(data)


@pytest.fixture(scope="module")
def many_accounts(tmp_path_factory) -> Path:
    """A closed ledger with many accounts, built once for the module."""
    data = tmp_path_factory.mktemp("checked-reads") / "ledger"
    envelopes = EnvelopeFactory()
    with LedgerOwner.open(data, genesis=default_genesis()) as owner:
        for number in range(ACCOUNTS):
            owner.submit_async(envelopes.account(f"acct-{number:05d}"))
        assert owner.submit(envelopes.account("acct-last")).accepted
    return data


@pytest.fixture
def damaged_state(many_accounts, tmp_path) -> Path:
    """A copy of that ledger with its state SST damaged in the middle."""
    data = tmp_path / "ledger"
    shutil.copytree(many_accounts, data)
    flip_middle(sst_holding(data, b"account/acct-01500"))
    return data


def test_a_scan_over_a_damaged_block_raises_naming_family_and_keys(damaged_state):
    with RocksStore(damaged_state, read_only=True) as store:
        seen = []
        with pytest.raises(StorageFault) as fault:
            for key, _ in store.scan(STATE, b"account/"):
                seen.append(key)
    assert fault.value.code == ErrorCode.STORAGE_CORRUPT
    assert fault.value.detail.startswith("scanning state prefix 'account/' after ")
    assert "checksum" in fault.value.detail
    assert 0 < len(seen) < ACCOUNTS  # it stopped part way, and said so


def test_a_point_read_of_a_damaged_block_raises_naming_its_key(damaged_state):
    with RocksStore(damaged_state, read_only=True) as store:
        with pytest.raises(StorageFault) as scanned:
            list(store.scan(STATE, b"account/"))
        after = re.search(r"after '([^']+)'", scanned.value.detail).group(1)
        damaged = [key for key in (f"account/acct-{n:05d}".encode() for n in range(ACCOUNTS)) if key > after.encode()]
        with pytest.raises(StorageFault) as read:
            store.get(STATE, damaged[0])
    assert read.value.detail.startswith(f"reading state/{damaged[0].decode()}: ")


def test_the_owner_halts_admission_when_a_command_meets_damage(damaged_state):
    envelopes = EnvelopeFactory()
    with RocksStore(damaged_state, read_only=True) as store:
        with pytest.raises(StorageFault) as scanned:
            list(store.scan(STATE, b"account/"))
    after = re.search(r"after 'account/([^']+)'", scanned.value.detail).group(1)
    victim = f"acct-{int(after.split('-')[1]) + 1:05d}"
    with LedgerOwner.open(damaged_state) as owner:
        envelopes.advance_to(owner.admission_floor_ms())
        head = owner.head()
        with pytest.raises(StorageFault) as met:
            owner.submit(envelopes.account(victim))  # reads state/account/<victim> from the damaged block
        assert met.value.code == ErrorCode.STORAGE_CORRUPT and victim in met.value.detail
        with pytest.raises(LedgerError) as halted:
            owner.submit(envelopes.account("acct-new"))
        assert halted.value.code == ErrorCode.LEDGER_HALTED and "STORAGE_CORRUPT" in halted.value.detail
        assert owner.head() == head


def test_a_console_read_of_damage_halts_admission_too(damaged_state):
    with LedgerOwner.open(damaged_state) as owner:
        with pytest.raises(StorageFault):
            owner.scan(STATE, "account/", limit=ACCOUNTS + 10)
        with pytest.raises(LedgerError) as halted:
            owner.submit(EnvelopeFactory().account("acct-new"))
        assert halted.value.code == ErrorCode.LEDGER_HALTED


def test_a_missing_ledger_is_not_found_and_nothing_is_created(tmp_path):
    for path in (tmp_path / "absent", tmp_path / "empty"):
        if path.name == "empty":
            path.mkdir()
        with pytest.raises(StorageFault) as refused:
            LedgerOwner.open(path)
        assert refused.value.code == ErrorCode.LEDGER_NOT_FOUND
        assert not path.exists() or not any(path.iterdir())


def test_a_failed_open_changes_no_file(damaged_state, tmp_path):
    manifest = (damaged_state / "CURRENT").read_text().strip()
    (damaged_state / manifest).unlink()
    before = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in damaged_state.iterdir()}
    for attempt in (lambda: LedgerOwner.open(damaged_state), lambda: LedgerOwner.open(damaged_state, genesis=default_genesis()),
                    lambda: RocksStore(damaged_state, read_only=True), lambda: RocksStore(damaged_state, create=True)):
        with pytest.raises(StorageFault) as refused:
            attempt()
        assert (refused.value.code, refused.value.detail) == (
            ErrorCode.STORAGE_INCOMPLETE, f"{manifest} named by CURRENT is missing from {damaged_state}")
    after = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in damaged_state.iterdir()}
    assert after == before
