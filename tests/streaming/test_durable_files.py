"""Durable files: created once, whole, and a failed sync never strands the writers waiting on it."""

from __future__ import annotations

import threading

import pytest

from ledger_engine.adapters import files


def test_create_durably_creates_once_and_keeps_the_first_bytes(tmp_path):
    target = tmp_path / "evidence" / "a"
    assert files.create_durably(target, b"first") is True
    assert files.create_durably(target, b"second") is False
    assert target.read_bytes() == b"first"
    assert [p.name for p in target.parent.iterdir()] == ["a"]


def test_a_failed_sync_raises_for_its_leader_and_the_next_waiter_leads_again(tmp_path, monkeypatch):
    group = files.GroupSync()
    failures = iter([OSError(5, "injected")])

    def flaky(directory):
        error = next(failures, None)
        if error:
            raise error

    monkeypatch.setattr(files, "sync_filesystem", flaky)
    with pytest.raises(OSError):
        group.wait_durable(tmp_path)
    finished = threading.Event()
    waiter = threading.Thread(target=lambda: (group.wait_durable(tmp_path), finished.set()))
    waiter.start()
    waiter.join(timeout=10)
    assert finished.is_set()
