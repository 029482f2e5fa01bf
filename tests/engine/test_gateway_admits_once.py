"""The gateway admits an envelope it builds once: the owner executes the command the gateway admitted."""

from __future__ import annotations

import pytest

from ledger_engine.adapters import gateway as gateway_module
from ledger_engine.adapters.gateway import CommandGateway
from ledger_engine.application import admission, owner as owner_module
from ledger_engine.canonical import canonical_bytes
from tests.conftest import GENESIS_ADMIN
from tests.engine.test_readmission import account_request

COMMAND_ID = "00000000-0000-4000-8000-0000000000c1"


@pytest.fixture
def admissions(monkeypatch):
    """Every call of ``admit``, from the gateway and from the owner alike."""
    calls: list[str] = []

    def counted(document):
        calls.append(document["command_id"])
        return admission.admit(document)

    monkeypatch.setattr(gateway_module, "admit", counted)
    monkeypatch.setattr(owner_module, "admit", counted)
    return calls


def test_a_new_command_is_admitted_once_and_journalled_as_stored(owner, tmp_path, admissions):
    gateway = CommandGateway(owner, tmp_path / "admission")
    outcome = gateway.execute("RegisterAccount", account_request(1), actor_id=GENESIS_ADMIN, command_id=COMMAND_ID)
    assert outcome.accepted
    assert admissions == [COMMAND_ID]
    stored = gateway.envelopes.load(COMMAND_ID)
    assert owner.journal_entry(outcome.sequence)["envelope"] == stored
    assert (gateway.envelopes.root / f"{COMMAND_ID}.json").read_bytes() == canonical_bytes(stored)


def test_a_retry_submits_the_stored_envelope_through_full_admission(owner, tmp_path, admissions):
    gateway = CommandGateway(owner, tmp_path / "admission")
    first = gateway.execute("RegisterAccount", account_request(1), actor_id=GENESIS_ADMIN, command_id=COMMAND_ID)
    again = gateway.execute("RegisterAccount", account_request(1), actor_id=GENESIS_ADMIN, command_id=COMMAND_ID)
    assert again.duplicate and again.sequence == first.sequence
    assert admissions == [COMMAND_ID, COMMAND_ID]  # the retry's loaded envelope is admitted by the owner


def test_an_envelope_changed_after_building_is_not_the_one_admitted(owner, tmp_path, admissions):
    gateway = CommandGateway(owner, tmp_path / "admission")
    built = gateway.envelope("RegisterAccount", account_request(1), actor_id=GENESIS_ADMIN, command_id=COMMAND_ID)
    copy = {**built}
    outcome = gateway.submit(copy)  # another object than the one built: admitted again, by the owner
    assert outcome.accepted and admissions == [COMMAND_ID, COMMAND_ID]


class Wrapping:
    """A ledger in front of the owner (a proxy, a test double): it must see every envelope."""

    def __init__(self, owner) -> None:
        self.owner = owner
        self.seen: list[str] = []

    def submit(self, document):
        self.seen.append(document["command_id"])
        return self.owner.submit(document)

    def __getattr__(self, name):
        return getattr(self.owner, name)


def test_a_ledger_wrapping_the_owner_sees_the_envelope(owner, tmp_path):
    ledger = Wrapping(owner)
    gateway = CommandGateway(ledger, tmp_path / "admission")
    assert gateway.execute("RegisterAccount", account_request(1), actor_id=GENESIS_ADMIN, command_id=COMMAND_ID).accepted
    assert ledger.seen == [COMMAND_ID]
