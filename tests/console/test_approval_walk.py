"""An approval from the POST to the WriteBatch (docs/README.md, "An approval's walk"): its command ID is looked up
once in the journal and once in the envelope store, and the envelope is admitted once; a retry of the answered form
is answered from the journal without a second admission, a second proof or a second lookup of the store."""

from __future__ import annotations

import pytest

from ledger_engine.adapters import gateway as gateway_module
from ledger_engine.application import owner as owner_module
from porto_console.console.commands import journalled_id, new_command_id
from porto_console.ledger import gateway as console_gateway
from tests.console.conftest import code_for
from tests.console.test_payouts import approve, prepare
from tests.engine.test_gateway_admits_once import admissions  # noqa: F401 (its fixture)
from tests.money_allocation.world import FINANCE, FINANCE_2


@pytest.fixture
def lookups(monkeypatch):
    """Each command ID the journal and the envelope store were asked for."""
    asked: dict[str, list[str]] = {"journal": [], "envelopes": []}
    resolve, load = owner_module.LedgerOwner.resolve, type(console_gateway().envelopes).load

    def resolving(self, command_id):
        asked["journal"].append(command_id)
        return resolve(self, command_id)

    def loading(self, command_id):
        asked["envelopes"].append(command_id)
        return load(self, command_id)

    monkeypatch.setattr(owner_module.LedgerOwner, "resolve", resolving)
    monkeypatch.setattr(type(console_gateway().envelopes), "load", loading)
    return asked


def test_an_approval_looks_its_id_up_once_in_each_store_and_is_admitted_once(finance, payouts_world, lookups,
                                                                             admissions):  # noqa: F811
    run_id = prepare(finance[FINANCE])
    lookups["journal"].clear(), lookups["envelopes"].clear(), admissions.clear()
    form_id = new_command_id()
    response = approve(finance[FINANCE_2], run_id, payouts_world, code=code_for(FINANCE_2), command_id=form_id)
    assert "Payout run approved" in response.content.decode()
    command_id = journalled_id(FINANCE_2, form_id)
    assert lookups["journal"].count(command_id) == 1
    assert lookups["envelopes"].count(command_id) == 1
    assert admissions == [command_id]


def test_the_answered_approval_sent_again_is_answered_from_the_journal_alone(finance, payouts_world, lookups,
                                                                            admissions):  # noqa: F811
    run_id = prepare(finance[FINANCE])
    form_id = new_command_id()
    approve(finance[FINANCE_2], run_id, payouts_world, code=code_for(FINANCE_2), command_id=form_id)
    lookups["journal"].clear(), lookups["envelopes"].clear(), admissions.clear()
    head = payouts_world.owner.head()
    response = approve(finance[FINANCE_2], run_id, payouts_world, code="000000", command_id=form_id)
    assert "already submitted: this is the original answer" in response.content.decode()
    command_id = journalled_id(FINANCE_2, form_id)
    assert lookups["journal"].count(command_id) == 1 and lookups["envelopes"] == [] and admissions == []
    assert payouts_world.owner.head() == head
