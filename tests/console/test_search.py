"""The header's search, on the demo ledger: a pasted ID, transaction hash or payout address opens its record's
sealed-handle page (a 303, the term nowhere in the URL or the request log); a fragment lists every record holding it
with its kind and a link; nothing found says so and keeps the term; a record the user's roles cannot open is never
found, and the answer is the same as for an ID that does not exist."""

from __future__ import annotations

import logging
import re
import unicodedata

import pytest
from django.urls import reverse

from ledger_engine.demo.foundation import DISPLAY_NAMES
from ledger_engine.layout import STATE
from porto_console.console.handles import seal
from porto_console.console.services import record_search

UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"


def records(ledger, prefix: str) -> dict[str, dict]:
    """The demo's records under ``prefix`` by ID, as the store holds them (not through the search's selector)."""
    return {key.split("/", 1)[1]: value["data"] for key, value in ledger.scan(STATE, prefix, limit=10_000)}


def first_id(ledger, prefix: str) -> str:
    return next(iter(records(ledger, prefix)))


def history_url(kind: str, record_id: str) -> str:
    return reverse("admin:console-record-history", args=[kind, seal(kind, record_id)])


def search(client, term: str):
    return client.post("/ledger/search/", {"term": term})


def answer(page: str) -> str:
    """The part of the page that says what was found."""
    return re.search(r'<section id="search-answer".*?</section>', page, re.DOTALL).group(0)


def listed(page: str) -> list[tuple[str, str, str]]:
    """Each result row: its kind, its link and its record ID."""
    return re.findall(r'<tr><td>([^<]+)</td><td><a href="([^"]+)">(?:<span class="recipient">)?'
                      r'(?:<bdi class="display-name">[^<]*</bdi> )?<code[^>]*>([^<]+)</code>', answer(page))


def test_a_pasted_run_id_opens_the_runs_page_with_a_303_and_the_id_nowhere_in_the_url(client_as, ledger, caplog):
    run_id = first_id(ledger, "payment_run/")
    finance = client_as("finance")
    with caplog.at_level(logging.INFO):
        response = search(finance, f"  {run_id}\n")
    assert response.status_code == 303
    assert response["Location"] == reverse("admin:console-payout-run", args=[seal("run", run_id)])
    assert run_id not in response["Location"] and run_id not in caplog.text
    assert f"Payout run {run_id}" in finance.get(response["Location"]).content.decode()


def test_a_term_in_the_query_string_is_never_searched(client_as, ledger):
    run_id = first_id(ledger, "payment_run/")
    response = client_as("finance").get("/ledger/search/", {"term": run_id})
    page = response.content.decode()
    assert response.status_code == 200 and 'id="search-answer"' not in page and run_id not in page


@pytest.mark.parametrize("kind, prefix, url_of", [
    ("payment", "payment/", lambda record_id: history_url("payment", record_id)),
    ("recipient", "recipient/", lambda record_id: history_url("recipient", record_id)),
    ("hold", "hold/", lambda record_id: reverse("admin:console-hold", args=[seal("hold", record_id)])),
    ("correction", "correction_request/",
     lambda record_id: reverse("admin:console-correction", args=[seal("correction", record_id)])),
])
def test_each_kind_of_id_opens_its_own_page_for_an_auditor(client_as, ledger, kind, prefix, url_of):
    record_id = first_id(ledger, prefix)
    response = search(client_as("auditor"), record_id)
    assert (response.status_code, response["Location"]) == (303, url_of(record_id))
    assert client_as("auditor").get(response["Location"]).status_code == 200


def test_a_transaction_hash_in_any_case_opens_its_payment(client_as, ledger):
    attempt = next(iter(records(ledger, "payment_attempt/").values()))
    response = search(client_as("finance"), attempt["transaction_hash"].upper())
    assert (response.status_code, response["Location"]) == (303, history_url("payment", attempt["payment_id"]))


def test_a_payout_address_opens_its_recipient(client_as, ledger):
    recipient_id, recipient = next(iter(records(ledger, "recipient/").items()))
    response = search(client_as("finance"), recipient["payout_address"])
    assert (response.status_code, response["Location"]) == (303, history_url("recipient", recipient_id))


def test_a_recipients_whole_display_name_in_any_case_opens_its_recipient(client_as, ledger):
    response = search(client_as("finance"), DISPLAY_NAMES["demo-artist-03"].upper())
    assert (response.status_code, response["Location"]) == (303, history_url("recipient", "demo-artist-03"))


def test_a_display_name_typed_decomposed_finds_the_name_stored_composed(client_as, ledger):
    decomposed = unicodedata.normalize("NFD", DISPLAY_NAMES["demo-artist-02"])
    assert decomposed != DISPLAY_NAMES["demo-artist-02"]
    response = search(client_as("finance"), decomposed)
    assert (response.status_code, response["Location"]) == (303, history_url("recipient", "demo-artist-02"))


def test_part_of_a_display_name_lists_each_recipient_by_its_name(client_as, ledger):
    response = search(client_as("finance"), "Tejo Stream")
    page = response.content.decode()
    assert listed(page) == [("Recipient", history_url("recipient", "demo-operator-01"), "demo-operator-01")]
    assert f'<bdi class="display-name">{DISPLAY_NAMES["demo-operator-01"]}</bdi>' in page
    assert "<td>display name</td>" in page


def test_part_of_an_id_lists_every_record_it_is_part_of_with_its_kind_and_link(client_as, ledger):
    fragment = "ARTIST-0"
    expected = sorted(recipient for recipient in records(ledger, "recipient/") if fragment.lower() in recipient)
    response = search(client_as("finance"), fragment)
    page = response.content.decode()
    assert response.status_code == 200 and len(expected) > 1
    assert listed(page) == [("Recipient", history_url("recipient", recipient), recipient) for recipient in expected]
    assert f"{len(expected)} records hold what you typed" in page
    assert 'value="ARTIST-0"' in page


def test_a_short_id_copied_from_a_list_finds_its_run(client_as, ledger):
    """Lists show IDs cut to twelve characters and an ellipsis: pasted as shown, the run is the one listed."""
    run_id = first_id(ledger, "payment_run/")
    page = search(client_as("auditor"), f"{run_id[:12]}…").content.decode()
    assert ("Payout run", reverse("admin:console-payout-run", args=[seal("run", run_id)]), run_id) in listed(page)


def test_a_fragment_matching_more_than_a_page_lists_the_first_and_says_so(client_as, ledger, monkeypatch):
    monkeypatch.setattr(record_search, "MOST_LISTED", 3)
    page = search(client_as("finance"), "demo-artist").content.decode()
    assert len(listed(page)) == 3 and "the first 3: type more of it to narrow them" in page


def test_nothing_found_says_so_and_keeps_the_term_in_the_field(client_as, ledger):
    response = search(client_as("finance"), "no-such-record-anywhere")
    page = response.content.decode()
    assert response.status_code == 200 and "Nothing found" in answer(page)
    assert re.search(r'<input type="search" name="term" id="search-term" value="no-such-record-anywhere"', page)
    assert "payout run, payment, recipient or correction you can open" in answer(page)


def test_a_term_too_short_to_look_inside_ids_says_how_long_it_must_be(client_as, ledger):
    page = search(client_as("finance"), "art").content.decode()
    assert "Nothing found" in answer(page) and "Type at least 4 characters to look for part of one" in answer(page)


@pytest.mark.parametrize("term, message", [
    ("   ", "Type or paste an ID, a transaction hash, a payout address or a recipient&#x27;s name."),
    ("x" * 201, "at most 200 characters"),
])
def test_a_blank_or_overlong_term_is_refused_and_reads_nothing(client_as, ledger, term, message):
    head = ledger.head()
    response = search(client_as("finance"), term)
    page = response.content.decode()
    assert response.status_code == 400 and message in page and 'id="search-answer"' not in page
    assert 'aria-invalid="true"' in page and ledger.head() == head


def test_ops_finds_no_run_and_the_answer_is_the_one_for_an_id_that_does_not_exist(client_as, ledger):
    run_id = first_id(ledger, "payment_run/")
    ops = client_as("ops")
    real, unknown = search(ops, run_id), search(ops, UNKNOWN_ID)
    assert real.status_code == unknown.status_code == 200
    real_answer, unknown_answer = answer(real.content.decode()), answer(unknown.content.decode())
    assert real_answer.replace(run_id, "TERM") == unknown_answer.replace(UNKNOWN_ID, "TERM")
    assert "hold you can open" in real_answer


def test_each_role_finds_only_the_kinds_it_opens(client_as, ledger):
    hold_id, correction_id = first_id(ledger, "hold/"), first_id(ledger, "correction_request/")
    assert search(client_as("ops"), hold_id).status_code == 303
    assert search(client_as("finance"), hold_id).status_code == 200  # finance opens no hold
    assert search(client_as("ops"), correction_id).status_code == 200  # ops opens no correction
    assert search(client_as("auditor"), correction_id).status_code == 303
    admin_page = search(client_as("admin"), hold_id).content.decode()
    assert "Your roles open no run, payment, recipient, hold or correction" in admin_page


def test_the_header_offers_the_search_to_every_role_that_opens_a_record_it_finds(client_as, ledger):
    for role in ("finance", "ops", "auditor"):
        header = re.search(r'<header id="header">.*?</header>', client_as(role).get("/ledger/").content.decode(),
                           re.DOTALL).group(0)
        form = re.search(r'<form method="post" action="/ledger/search/" id="header-search".*?</form>', header,
                         re.DOTALL)
        assert form and 'name="csrfmiddlewaretoken"' in form.group(0) and 'name="term"' in form.group(0), role
    assert 'id="header-search"' not in client_as("admin").get("/ledger/journal/").content.decode()
