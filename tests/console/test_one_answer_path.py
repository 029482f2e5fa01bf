"""A person's form and a worker's request take one answer path: one journalled ID, one conflict check, and a retry
the ledger journalled is answered from the journal without the owner admitting it again (docs/adr/0097)."""

from __future__ import annotations

from typing import Any

import pytest

from ledger_engine.adapters.command_answers import CONSOLE, INTERNAL_API, Journalled
from ledger_engine.errors import LedgerError
from porto_console.console import commands as console_commands
from porto_console.console.commands import CommandRequest
from porto_console.internal_api import commands as api_commands
from porto_console.internal_api.models import WorkerCredential
from porto_console.ledger import gateway
from tests.conftest import GENESIS_ADMIN
from tests.console.test_internal_api import COMMANDS, import_funding, ingest, ledger  # noqa: F401 (its fixtures)
from tests.console.test_internal_api_batch import BATCH
from tests.engine.test_gateway_admits_once import admissions  # noqa: F401 (its fixture)
from tests.engine.test_readmission import account_request

pytestmark = pytest.mark.django_db

SENT_ID = "00000000-0000-4000-8000-00000000f001"
WORKER = "ingest-1"


class FromConsole:
    """A person's form, handed to the ledger as the console hands it: the genesis admin registers an account."""

    actor_id = GENESIS_ADMIN
    edge = CONSOLE

    def send(self, sent_id: str, number: int) -> dict[str, Any] | str:
        """The outcome as JSON, or the code of the refusal."""
        try:
            return console_commands.submit(self.actor_id, sent_id, self._request(number)).as_json()
        except LedgerError as refused:
            return str(refused.code)

    def store_only(self, sent_id: str, number: int) -> None:
        """The form's envelope stored and never submitted: a submit lost before it reached the ledger."""
        request = self._request(number)
        gateway().envelope(request.command_type, request.payload, actor_id=self.actor_id,
                           command_id=self.edge.journalled_id(self.actor_id, sent_id))

    @staticmethod
    def _request(number: int) -> CommandRequest:
        return CommandRequest("RegisterAccount", account_request(number))


class FromWorker:
    """A worker's request to the internal API: the ingest worker imports a funding lot."""

    actor_id = WORKER
    edge = INTERNAL_API

    def __init__(self, worker: Any) -> None:
        self.worker = worker

    def send(self, sent_id: str, number: int) -> dict[str, Any] | str:
        response = self.worker.post(COMMANDS, self._request(sent_id, number))
        body = response.json()
        return body if response.status_code == 200 else body["code"]

    def store_only(self, sent_id: str, number: int) -> None:
        credential = WorkerCredential.objects.get(name=WORKER)
        prepared = api_commands.prepare(credential, self._request(sent_id, number))
        assert not isinstance(prepared, Journalled)
        gateway().keep(prepared)

    @staticmethod
    def _request(sent_id: str, number: int) -> dict[str, Any]:
        return import_funding(f"lot-{number}", command_id=sent_id, expected_revisions=[])  # as the schema fills it


@pytest.fixture(params=["console", "internal-api"])
def sender(request, ledger, ingest):  # noqa: F811 (the fixtures imported above)
    return FromConsole() if request.param == "console" else FromWorker(ingest)


def test_the_same_request_twice_is_journalled_once_and_answered_the_same(ledger, sender):  # noqa: F811
    head = ledger.head()
    first = sender.send(SENT_ID, 1)
    again = sender.send(SENT_ID, 1)
    assert first["outcome"] == "accepted" and not first["duplicate"]
    assert again == {**first, "duplicate": True}
    assert ledger.head().sequence == head.sequence + 1


def test_another_request_under_a_journalled_id_is_a_conflict_and_journals_nothing(ledger, sender):  # noqa: F811
    first = sender.send(SENT_ID, 1)
    head = ledger.head()
    assert sender.send(SENT_ID, 2) == "COMMAND_ID_CONFLICT"
    assert ledger.head() == head
    assert sender.send(SENT_ID, 1) == {**first, "duplicate": True}


def test_another_request_under_a_stored_id_is_a_conflict_and_the_stored_one_is_still_answered(ledger,  # noqa: F811
                                                                                           sender):
    sender.store_only(SENT_ID, 1)
    head = ledger.head()
    assert sender.send(SENT_ID, 2) == "COMMAND_ID_CONFLICT"
    assert ledger.head() == head
    stored = gateway().envelopes.load(sender.edge.journalled_id(sender.actor_id, SENT_ID))
    answered = sender.send(SENT_ID, 1)
    assert answered["outcome"] == "accepted" and answered["sequence"] == head.sequence + 1
    assert ledger.journal_entry(answered["sequence"])["envelope"]["payload"] == stored["payload"]


def test_a_retry_the_ledger_journalled_is_answered_without_being_admitted_again(ledger, sender,  # noqa: F811
                                                                               admissions):
    first = sender.send(SENT_ID, 1)
    assert len(admissions) == 1  # the gateway admitted the new envelope; the owner executed that admission
    again = sender.send(SENT_ID, 1)
    assert len(admissions) == 1
    assert again == {**first, "duplicate": True}


def test_a_workers_id_and_a_forms_equal_id_are_two_commands_of_their_own(ledger, ingest):  # noqa: F811
    head = ledger.head()
    by_person = FromConsole().send(SENT_ID, 1)
    by_worker = FromWorker(ingest).send(SENT_ID, 1)
    assert by_person["outcome"] == by_worker["outcome"] == "accepted"
    assert (by_person["sequence"], by_worker["sequence"]) == (head.sequence + 1, head.sequence + 2)
    assert by_person["command_id"] == CONSOLE.journalled_id(GENESIS_ADMIN, SENT_ID)
    assert ledger.journal_entry(by_worker["sequence"])["envelope"]["command_id"] == INTERNAL_API.journalled_id(
        WORKER, SENT_ID)
    assert CONSOLE.journalled_id(WORKER, SENT_ID) != INTERNAL_API.journalled_id(WORKER, SENT_ID)


def test_each_edges_journalled_ids_are_the_ones_existing_ledgers_hold():
    """Derived as before the edges shared one answer path: a journalled command is still found by its form or
    request ID."""
    assert console_commands.journalled_id(GENESIS_ADMIN, SENT_ID) == "e490ea91-894b-4ebd-9954-dc2381e58e01"
    assert api_commands.journalled_id(GENESIS_ADMIN, SENT_ID) == "6e71edca-b5ef-4890-8797-d600b3550d71"


def test_a_retried_batch_the_ledger_journalled_is_answered_without_being_admitted_again(ledger, ingest,  # noqa: F811
                                                                                        admissions):
    requests = [import_funding(f"lot-{number}") for number in range(3)]
    first = ingest.post(BATCH, {"commands": requests}).json()["results"]
    assert len(admissions) == 3 and {result["outcome"]["outcome"] for result in first} == {"accepted"}
    head = ledger.head()
    again = ingest.post(BATCH, {"commands": requests}).json()["results"]
    assert len(admissions) == 3 and ledger.head() == head
    assert [result["outcome"] for result in again] == [{**result["outcome"], "duplicate": True} for result in first]
