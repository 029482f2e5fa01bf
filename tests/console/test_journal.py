"""Journal explorer (auditor): entries by sequence and command ID, chain verification, audited export."""

from __future__ import annotations

import hashlib
import re

from ledger_engine.adapters.gateway import derived_command_id
from ledger_engine.selectors import journal_queries
from porto_console.console.commands import journalled_id, new_command_id


def test_the_journal_lists_newest_first_and_pages_down_by_sequence(client_as, ledger):
    client = client_as("auditor")
    head = ledger.head().sequence
    first = client.get("/ledger/journal/").content.decode()
    sequences = [int(s) for s in re.findall(r'href="/ledger/journal/(\d+)/"', first)]
    assert sequences == list(range(head, head - 50, -1))
    older = client.get("/ledger/journal/", {"before": str(head - 49)}).content.decode()
    assert [int(s) for s in re.findall(r'href="/ledger/journal/(\d+)/"', older)] == list(range(head - 50, head - 100, -1))


def test_the_journal_filters_by_command_type_and_outcome(client_as, ledger):
    client = client_as("auditor")
    page = client.get("/ledger/journal/", {"command_type": "ImportFunding"}).content.decode()
    shown = [int(s) for s in re.findall(r'href="/ledger/journal/(\d+)/"', page)]
    funding = [s for s in range(1, ledger.head().sequence + 1)
               if ledger.journal_entry(s)["envelope"]["command_type"] == "ImportFunding"]
    assert shown == sorted(funding, reverse=True) and shown
    rejected = client.get("/ledger/journal/", {"outcome": "rejected"}).content.decode()
    shown = [int(s) for s in re.findall(r'href="/ledger/journal/(\d+)/"', rejected)]
    assert shown and all(ledger.journal_entry(s)["outcome"] == "rejected" for s in shown)


def test_an_entry_shows_envelope_outcome_and_hashes_and_verifies(client_as, ledger):
    entry = ledger.journal_entry(5)
    page = client_as("auditor").get("/ledger/journal/5/").content.decode()
    for value in (entry["envelope"]["command_id"], entry["delta_hash"], entry["entry_hash"],
                  entry["previous_entry_hash"]):
        assert value in page
    assert "recomputes and links" in page
    assert client_as("auditor").get(f"/ledger/journal/{ledger.head().sequence + 1}/").status_code == 404


def test_an_entry_is_read_through_a_view_as_the_journal_stored_it(ledger):
    head = ledger.head().sequence
    assert ledger.read(lambda view: journal_queries.entry(view, 5)) == ledger.journal_entry(5)
    assert ledger.read(lambda view: journal_queries.entry(view, head)) == ledger.journal_entry(head)
    assert ledger.read(lambda view: journal_queries.entry(view, head + 1)) is None


def test_a_command_id_finds_its_entry_through_a_post(client_as, ledger):
    command_id = ledger.journal_entry(7)["envelope"]["command_id"]
    response = client_as("auditor").post("/ledger/journal/lookup/", {"command_id": command_id})
    assert response.status_code == 302 and response["Location"] == "/ledger/journal/7/"
    missing = client_as("auditor").post("/ledger/journal/lookup/", {"command_id": new_command_id()}, follow=True)
    assert "No command with that ID is in the ledger." in missing.content.decode()


def test_verifying_a_range_recomputes_every_entry(client_as, ledger):
    page = client_as("auditor").post("/ledger/journal/verify/", {"first": "1", "last": str(ledger.head().sequence)})
    assert f"Chain verified: {ledger.head().sequence} entries from 1 to {ledger.head().sequence}" in page.content.decode()


def test_verifying_finds_an_entry_that_does_not_match_its_hash(client_as, ledger, monkeypatch):
    original = journal_queries.entry

    def tampered(view, sequence):
        entry = original(view, sequence)
        if sequence == 9:
            entry["envelope"]["payload"] = {**entry["envelope"]["payload"], "roles": ["admin"]}
        return entry

    monkeypatch.setattr(journal_queries, "entry", tampered)
    page = client_as("auditor").post("/ledger/journal/verify/", {"first": "3", "last": "20"}).content.decode()
    assert "Chain broken after 6 good entries: sequence 9: entry hash does not match its contents" in page


def test_a_range_beyond_the_head_is_refused(client_as, ledger):
    page = client_as("auditor").post("/ledger/journal/verify/",
                                     {"first": "1", "last": str(ledger.head().sequence + 1)}).content.decode()
    assert "Choose a range within 1 to" in page and "Chain verified" not in page


def test_an_export_is_recorded_in_the_ledger_before_the_file_is_handed_out(client_as, users, ledger):
    client = client_as("auditor")
    head = ledger.head()
    command_id = new_command_id()
    form = {"command_id": command_id, "first": "1", "last": "5", "file_format": "csv"}
    response = client.post("/ledger/journal/export/", form)
    assert response["Content-Disposition"] == 'attachment; filename="journal-1-5.csv"'
    content = b"".join(response.streaming_content) if response.streaming else response.content
    recorded = ledger.resolve(journalled_id(users["auditor"].get_username(), command_id))
    assert recorded.accepted and recorded.sequence == head.sequence + 1
    event = ledger.scan("events", f"{recorded.sequence:020d}/")[0][1]
    assert event["type"] == "ExportAccessed" and event["content_sha256"] == hashlib.sha256(content).hexdigest()
    assert (event["first_sequence"], event["last_sequence"]) == (1, 5)
    again = client.post("/ledger/journal/export/", form)
    assert again.content == content and ledger.head().sequence == head.sequence + 1


def test_an_answered_export_form_reposted_for_a_wider_range_hands_out_nothing(client_as, ledger):
    """Only the range the ledger recorded is ever handed out under a form's ID."""
    client = client_as("auditor")
    command_id = new_command_id()
    client.post("/ledger/journal/export/", {"command_id": command_id, "first": "1", "last": "5",
                                            "file_format": "json"})
    head = ledger.head()
    wider = client.post("/ledger/journal/export/", {"command_id": command_id, "first": "1",
                                                    "last": str(head.sequence), "file_format": "json"}, follow=True)
    assert "Content-Disposition" not in wider
    assert "COMMAND_ID_CONFLICT" in wider.content.decode()
    assert ledger.head() == head


def test_an_export_by_another_role_records_nothing(client_as, ledger):
    head = ledger.head()
    response = client_as("finance").post("/ledger/journal/export/", {
        "command_id": new_command_id(), "first": "1", "last": "5", "file_format": "json"})
    assert response.status_code == 403
    assert ledger.head() == head



def test_a_form_cannot_take_the_command_id_a_webhook_derives(client_as, users, ledger):
    """A form's ID is the user's to choose; the ledger journals the command under that user's own ID space."""
    webhook_id = derived_command_id("ApplyBillingObservation", "test-pay", "pay-1")
    response = client_as("auditor").post("/ledger/journal/export/", {
        "command_id": webhook_id, "first": "1", "last": "5", "file_format": "json"})
    assert response.status_code == 200
    assert ledger.resolve(webhook_id) is None
    recorded = ledger.resolve(journalled_id(users["auditor"].get_username(), webhook_id))
    assert recorded.accepted and ledger.journal_entry(recorded.sequence)["envelope"]["command_type"] == "RecordExportAccess"
