"""Recipients' display names and the provisioning form, attacked: an admin who renames recipients to markup,
formulas, directional overrides, invisible characters, another recipient's name or another account's ID; a finance
user who searches by name and exports what they see; an admin who ticks guarded roles, forges fields and posts the
provisioning form again. Each test says what must hold."""

from __future__ import annotations

import csv
import io
import re
import unicodedata

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils.html import escape

from ledger_engine.demo.foundation import DISPLAY_NAMES, GENESIS_ADMIN
from ledger_engine.layout import STATE
from ledger_engine.selectors import staff_queries
from porto_console.console import commands
from porto_console.console.commands import new_command_id
from porto_console.console.handles import seal
from porto_console.console.services import record_search, staff_changes
from tests.console.conftest import STAFF
from tests.console.recipients import named, unnamed

RECIPIENT_IDS = sorted(DISPLAY_NAMES)  # every recipient of the demo (eight artists, three operators) has a name


# Helpers: the admin's own screens, as an attacker holding the admin role would use them.

def account(ledger, account_id: str) -> dict:
    return ledger.get(STATE, f"account/{account_id}").data


def rename(client, ledger, account_id: str, name: str):
    """The admin's change form on the account's page, posted with a new display name (roles and status kept)."""
    revision = ledger.get(STATE, f"account/{account_id}").revision
    return client.post(f"/ledger/accounts/{seal('account', account_id)}/", {
        "command_id": new_command_id(), "revision": str(revision), "roles": [], "active": "on",
        "display_name": name}, follow=True)


def rename_all(client, ledger, name_of) -> dict[str, str]:
    """Every demo recipient renamed to ``name_of(recipient_id)``; the names the ledger then holds."""
    for recipient_id in RECIPIENT_IDS:
        rename(client, ledger, recipient_id, name_of(recipient_id))
    return {recipient_id: account(ledger, recipient_id).get("display_name") for recipient_id in RECIPIENT_IDS}


def provision(client, **fields):
    data = {"command_id": new_command_id(), "kind": "staff", "account_id": "ops-3", "identity": "ops3@porto.test",
            "roles": ["ops"], "payout_address": "", "display_name": "", **fields}
    return client.post("/ledger/accounts/new/", data, follow=True)


def changes_of(ledger, account_id: str) -> list[dict]:
    return ledger.read(lambda view: staff_queries.changes(view, account_id=account_id))


def csv_rows(response) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def csv_text(response) -> str:
    return b"".join(response.streaming_content).decode()


def search(client, term: str):
    return client.post("/ledger/search/", {"term": term})


def history_url(kind: str, record_id: str) -> str:
    return reverse("admin:console-record-history", args=[kind, seal(kind, record_id)])


def records(ledger, prefix: str) -> dict[str, dict]:
    return {key.split("/", 1)[1]: value["data"] for key, value in ledger.scan(STATE, prefix, limit=10_000)}


# Markup in a name: escaped and isolated on every screen that names a recipient.

MARKUP = '<b class="pwn" onmouseover="alert(1)">{}</b> & "Co\'s"'

EXPORTS = {"payments": ("/ledger/payouts/payments/", {"state": "all", "format": "csv"}),
           "payables": ("/ledger/payouts/prepare/", {"format": "csv"}),
           "balances": ("/ledger/budgets/payables/", {"format": "csv"})}


def screens(ledger) -> dict[str, tuple[str, str]]:
    """Every screen that names recipients, by the role that opens it: (role, path)."""
    pages = {"payments": ("finance", "/ledger/payouts/payments/?state=all"),
             "prepare": ("finance", "/ledger/payouts/prepare/"),
             "balances": ("finance", "/ledger/budgets/payables/"),
             "accounts": ("auditor", "/ledger/accounts/?kind=artist")}
    for status in {update["status"] for update in records(ledger, "recipient_update/").values()}:
        pages[f"{status} recipient updates"] = ("finance", f"/ledger/recipients/?status={status}")
    for run_id in records(ledger, "payment_run/"):
        pages[f"run {run_id}"] = ("auditor", reverse("admin:console-payout-run", args=[seal("run", run_id)]))
    for correction_id in records(ledger, "correction_request/"):
        pages[f"correction {correction_id}"] = (
            "auditor", reverse("admin:console-correction", args=[seal("correction", correction_id)]))
    for statement_id in records(ledger, "statement/"):
        pages[f"statement {statement_id}"] = ("finance", f"/ledger/statements/{seal('statement', statement_id)}/")
    return pages


def test_a_name_of_markup_is_text_isolated_beside_the_id_on_every_screen_that_names_a_recipient(client_as, ledger):
    names = rename_all(client_as("admin"), ledger, MARKUP.format)
    assert names == {recipient_id: MARKUP.format(recipient_id) for recipient_id in RECIPIENT_IDS}
    shown_by_kind: dict[str, set[str]] = {}
    for screen, (role, path) in screens(ledger).items():
        page = client_as(role).get(path).content.decode()
        assert 'class="pwn"' not in page and "<b " not in page, screen
        shown = {rid for rid in names if f'<code class="record-id">{rid}</code>' in page}
        assert all(named(names[rid], rid) in page and unnamed(rid) not in page for rid in shown), screen
        shown_by_kind.setdefault(screen.split(" ")[0], set()).update(shown)
    assert all(shown_by_kind.values()), shown_by_kind  # each kind of screen named some recipient
    found = search(client_as("finance"), "& \"Co's\"").content.decode()
    assert 'class="pwn"' not in found and all(named(name, rid) in found for rid, name in names.items())
    detail = client_as("admin").get(f"/ledger/accounts/{seal('account', 'demo-artist-00')}/").content.decode()
    assert 'class="pwn"' not in detail and f"<bdi>{escape(names['demo-artist-00'])}</bdi>" in detail


# Formulas in a name: quoted in every export's recipient_name column.

FORMULA = '=HYPERLINK("http://evil.invalid/{}","Pay here")'


@pytest.mark.parametrize("export", sorted(EXPORTS))
def test_a_name_a_spreadsheet_would_run_is_quoted_in_each_exports_recipient_name(client_as, ledger, export):
    names = rename_all(client_as("admin"), ledger, FORMULA.format)
    path, params = EXPORTS[export]
    rows = csv_rows(client_as("finance").get(path, params))
    assert rows and all(row["recipient_name"] == "'" + names[row["recipient_id"]] for row in rows)


@pytest.mark.parametrize("export", sorted(EXPORTS))
def test_each_export_names_each_recipient_as_the_ledger_holds_its_name(client_as, ledger, export):
    path, params = EXPORTS[export]
    rows = csv_rows(client_as("finance").get(path, params))
    assert rows and all(row["recipient_name"] == DISPLAY_NAMES[row["recipient_id"]] for row in rows)


# Directional controls: a name's override must not reach past its own cell in a plain-text file.

OPENERS = {"\u202a", "\u202b", "\u202d", "\u202e"}  # LRE, RLE, LRO, RLO: closed by PDF (U+202C)
ISOLATES = {"\u2066", "\u2067", "\u2068"}  # LRI, RLI, FSI: closed by PDI (U+2069)


def leaks_direction(cell: str) -> bool:
    """Whether ``cell`` leaves an embedding, override or isolate open at its end: text after it on the same line
    (the next cells of a CSV row, read in an editor or a terminal) would be reordered, digits of amounts included."""
    stack: list[str] = []
    for char in cell:
        if char in OPENERS or char in ISOLATES:
            stack.append(char)
        elif char == "\u202c" and stack and stack[-1] in OPENERS:
            stack.pop()
        elif char == "\u2069" and any(opened in ISOLATES for opened in stack):
            while stack.pop() not in ISOLATES:
                pass
    return bool(stack)


def test_the_leak_check_sees_an_open_override_and_not_a_closed_one():
    assert leaks_direction("Fado \u202eoC") and leaks_direction("\u2067x")
    assert not leaks_direction("Fado \u202eoC\u202c") and not leaks_direction("\u2068Fado \u202eoC\u2069")
    assert not leaks_direction("ليلى النيل (demo)")


@pytest.mark.parametrize("export", sorted(EXPORTS))
def test_a_names_directional_override_never_reorders_the_amounts_beside_it_in_an_export(client_as, ledger, export):
    """An export is plain text, so a name's open directional override would reverse the amounts beside it in a
    CSV row: display text refuses the embeddings, overrides and isolates (right-to-left names need only the marks)."""
    rename_all(client_as("admin"), ledger, lambda recipient_id: f"Fado {recipient_id} \u202eoC")
    path, params = EXPORTS[export]
    text = csv_text(client_as("finance").get(path, params))
    rows = list(csv.reader(io.StringIO(text)))
    assert len(rows) > 1
    assert [cell for row in rows for cell in row if leaks_direction(cell)] == []


# Invisible characters, another recipient's name, another account's ID.

INVISIBLE = {
    "zero-width space inside another's name": "Aurora\u200b Vale (demo)",
    "word joiner at the end of another's name": "Aurora Vale (demo)\u2060",
    "tag characters smuggled after another's name": "Aurora Vale (demo)\U000e0070\U000e0061\U000e0079",
    "byte order mark inside another's name": "Aurora \ufeffVale (demo)",
    "nothing visible at all": "\u200b",
    "a soft hyphen alone": "\u00ad",
}


@pytest.mark.parametrize("name", INVISIBLE.values(), ids=list(INVISIBLE))
def test_a_name_that_differs_from_another_only_by_what_nobody_sees_is_refused(client_as, ledger, name):
    """A name that differs from another only by what nobody sees (a zero-width space, a word joiner, a byte order
    mark, a soft hyphen, a tag), or shows as nothing, is refused: display text allows no invisible format
    character but the joiners and the directional marks."""
    before = account(ledger, "demo-artist-01")["display_name"]
    rename(client_as("admin"), ledger, "demo-artist-01", name)
    assert account(ledger, "demo-artist-01")["display_name"] == before


def comparable(name: str) -> str:
    return unicodedata.normalize("NFKC", name).casefold()


@pytest.mark.parametrize("name", [DISPLAY_NAMES["demo-artist-00"], DISPLAY_NAMES["demo-artist-00"].upper()],
                         ids=["the same", "in other case"])
def test_no_two_recipients_are_shown_under_one_name(client_as, ledger, name):
    """A name tells one recipient apart: a second recipient is refused another's name, however cased or composed
    (a uniqueness sentinel of the name's NFKC case fold)."""
    rename(client_as("admin"), ledger, "demo-artist-01", name)
    names = {rid: comparable(account(ledger, rid).get("display_name", "")) for rid in RECIPIENT_IDS}
    assert [rid for rid, held in names.items() if held == comparable(name)] == ["demo-artist-00"]


def test_a_recipient_is_never_named_after_another_accounts_id(client_as, ledger):
    """A recipient is never named after another account's ID, which a reader or a spreadsheet filter would take
    for that account."""
    rename(client_as("admin"), ledger, "demo-artist-01", "demo-artist-00")
    assert account(ledger, "demo-artist-01")["display_name"] == DISPLAY_NAMES["demo-artist-01"]


def test_a_name_cannot_stack_marks_that_paint_over_the_rows_around_it(client_as, ledger):
    """A name of one letter and sixty combining marks, which a browser paints over the rows around it, is
    refused: at most four combining marks on a letter."""
    stacked = "Z" + "\u0363\u0364\u0365\u0366\u0367\u0368" * 10 + "ed"  # no precomposed form: NFC keeps them
    assert unicodedata.normalize("NFC", stacked) == stacked and len(stacked) <= 100
    rename(client_as("admin"), ledger, "demo-artist-01", stacked)
    assert account(ledger, "demo-artist-01")["display_name"] == DISPLAY_NAMES["demo-artist-01"]


# The search, by name.

def test_a_name_in_any_case_means_unicode_case_not_only_lower_case(client_as, ledger):
    """"Any case" is Unicode's case folding: STRASSE finds Straße."""
    assert rename(client_as("admin"), ledger, "demo-artist-07", "Straße Nord").status_code == 200
    assert account(ledger, "demo-artist-07")["display_name"] == "Straße Nord"
    whole = search(client_as("finance"), "STRASSE NORD")
    assert (whole.status_code, whole.get("Location")) == (303, history_url("recipient", "demo-artist-07"))
    part = search(client_as("finance"), "strasse").content.decode()
    assert named("Straße Nord", "demo-artist-07") in part


@pytest.mark.parametrize("pasted", [lambda run_id: run_id[:8], lambda run_id: f"{run_id[:12]}…"],
                         ids=["part of a run ID", "a short ID copied from a list"])
def test_a_name_never_takes_a_pasted_part_of_an_id_away_from_its_record(client_as, ledger, pasted):
    """A name never takes a pasted ID away from its record: a term copied from a list (its ellipsis) is looked for
    among IDs only, and a whole name opens its recipient only when no ID holds the term."""
    run_id = next(iter(records(ledger, "payment_run/")))
    term = pasted(run_id)
    rename(client_as("admin"), ledger, "demo-artist-05", term.removesuffix("…"))  # refused or not, the run is found
    response = search(client_as("finance"), term)
    assert response.status_code == 200, response.get("Location")
    assert reverse("admin:console-payout-run", args=[seal("run", run_id)]) in response.content.decode()


SHARED_ADDRESS = "0x" + "5a" * 32


def test_an_exact_answer_is_listed_no_longer_than_a_fragments(client_as, ledger, monkeypatch):
    """An exact answer is listed no longer than a fragment's: a payout address many recipients share lists the
    first MOST_LISTED and says so."""
    admin = client_as("admin")
    for number in range(3):
        provision(admin, kind="artist", account_id=f"acct-shared-{number}", identity=f"provider|shared-{number}",
                  roles=[], payout_address=SHARED_ADDRESS)
    assert len([r for r in records(ledger, "recipient/").values() if r["payout_address"] == SHARED_ADDRESS]) == 3
    monkeypatch.setattr(record_search, "MOST_LISTED", 2)
    page = search(client_as("finance"), SHARED_ADDRESS).content.decode()
    assert page.count('<bdi class="display-name">') + page.count('class="recipient"><code') <= 2
    assert "the first 2" in page


def test_a_fragment_of_a_name_that_many_recipients_share_lists_the_first_and_says_so(client_as, ledger,
                                                                                      monkeypatch):
    monkeypatch.setattr(record_search, "MOST_LISTED", 3)
    page = search(client_as("finance"), "(DEMO)").content.decode()
    assert page.count('<bdi class="display-name">') == 3 and "the first 3: type more of it to narrow them" in page


@pytest.mark.parametrize("term", ["Aurora Vale", "🎵🎶🎵🎶", "x" * 200, "demo-artist-00/../recipient", "%_*",
                                  "recipient/", "' OR 1=1 --", "\u202e00-tsitra-omed"])
def test_a_term_that_is_no_identifier_is_answered_and_changes_nothing(client_as, ledger, term):
    head = ledger.head()
    response = search(client_as("finance"), term)
    assert response.status_code in (200, 303) and ledger.head() == head
    if response.status_code == 200:
        assert 'id="search-answer"' in response.content.decode()


def answer(page: str) -> str:
    return re.search(r'<section id="search-answer".*?</section>', page, re.DOTALL).group(0)


def test_a_name_finds_nothing_for_a_role_that_opens_no_recipient(client_as, ledger):
    """ops opens no recipient: a recipient's whole name, or part of it, answers as a name nobody has."""
    ops = client_as("ops")
    for term in (DISPLAY_NAMES["demo-artist-03"], "Quiet Ferr"):
        assert answer(search(ops, term).content.decode()) == answer(search(ops, "Nobody Has This").content.decode())
    assert search(client_as("finance"), DISPLAY_NAMES["demo-artist-03"]).status_code == 303  # finance opens it


@pytest.mark.parametrize("path", ["/ledger/payouts/payments/?state=all&recipient=Aurora+Vale",
                                  "/ledger/budgets/payables/?recipient=Aurora+Vale"], ids=["payments", "balances"])
def test_a_screens_recipient_filter_finds_the_name_the_screen_shows_or_asks_for_the_id(client_as, ledger, path):
    """A screen's recipient filter either finds the name the screen shows or says it wants the ID."""
    page = client_as("finance").get(path).content.decode()
    finds_by_name = named(DISPLAY_NAMES["demo-artist-00"], "demo-artist-00") in page
    asks_for_the_id = re.search(r"<label>Recipient ID <input[^>]*name=\"recipient\"", page) is not None
    assert finds_by_name or asks_for_the_id


# Provisioning: guarded roles ticked, fields forged, the form posted again.

def approvers_named(page: str, role: str, account_id: str) -> list[str]:
    found = re.search(rf"Granting {role} to {account_id} is requested: another admin \(([^)]*)\) approves it", page)
    assert found is not None, page
    return found[1].split(", ")


def test_the_message_names_as_approvers_only_admins_who_can_sign_in_to_approve(client_as, ledger):
    """The approvers a provisioning message names are admins who sign in to the console; genesis-admin, with no
    console user, is not one."""
    assert ledger.get(STATE, f"actor/{GENESIS_ADMIN}").data == {"roles": ["admin"], "status": "active"}
    assert not User.objects.filter(username=GENESIS_ADMIN).exists()
    page = provision(client_as("admin"), roles=["ops", "finance"]).content.decode()
    approvers = approvers_named(page, "finance", "ops-3")
    assert STAFF["admin2"] in approvers and GENESIS_ADMIN not in approvers


def test_ticking_admin_and_finance_together_is_refused_with_the_reason_and_files_nothing(client_as, ledger,
                                                                                          mailoutbox):
    head = ledger.head()
    page = provision(client_as("admin"), roles=["admin", "finance", "ops"]).content.decode()
    assert "An account cannot hold admin and finance together: whoever decides who may move money does not " \
           "move it." in page
    assert "is requested" not in page and "provisioned" not in page
    assert ledger.head() == head and ledger.get(STATE, "account/ops-3") is None
    assert not User.objects.filter(username="ops-3").exists() and mailoutbox == []


@pytest.mark.parametrize("kind, identity", [("artist", "provider|a"), ("operator", "provider|o"),
                                            ("listener", "provider|l")])
@pytest.mark.parametrize("role", ["finance", "admin"])
def test_a_guarded_role_forged_onto_a_domain_account_is_refused_and_files_nothing(client_as, ledger, kind, identity,
                                                                                   role):
    head = ledger.head()
    page = provision(client_as("admin"), kind=kind, account_id="acct-forged", identity=identity,
                     roles=[role]).content.decode()
    assert f"A {kind} account cannot hold {role}." in page
    assert ledger.head() == head and ledger.get(STATE, "account/acct-forged") is None


@pytest.mark.parametrize("kind, identity, roles", [("staff", "ops9@porto.test", ["ops"]),
                                                   ("worker", "host|ingest-9", ["ingest"]),
                                                   ("listener", "provider|l", [])])
def test_a_display_name_forged_onto_an_account_that_is_not_paid_is_refused(client_as, ledger, kind, identity, roles):
    head = ledger.head()
    page = provision(client_as("admin"), kind=kind, account_id="acct-9", identity=identity, roles=roles,
                     display_name="Forged Name").content.decode()
    assert f"Only artists and operators have a display name, not a {kind}." in page
    assert ledger.head() == head and ledger.get(STATE, "account/acct-9") is None


def test_the_genesis_admins_id_cannot_be_provisioned_as_a_staff_account(client_as, ledger):
    before = ledger.get(STATE, f"actor/{GENESIS_ADMIN}").data
    page = provision(client_as("admin"), account_id=GENESIS_ADMIN, identity="genesis@porto.test").content.decode()
    assert "ALREADY_EXISTS" in page
    assert ledger.get(STATE, f"actor/{GENESIS_ADMIN}").data == before == {"roles": ["admin"], "status": "active"}
    assert ledger.get(STATE, f"account/{GENESIS_ADMIN}") is None


@pytest.mark.parametrize("first, again", [(["ops"], ["ops", "finance"]), (["ops", "finance"], ["ops"]),
                                          (["ops", "finance"], ["ops", "admin"])],
                         ids=["without then with", "with then without", "finance then admin"])
def test_a_provisioning_form_posted_again_with_other_guarded_roles_grants_nothing_alone(client_as, ledger, first,
                                                                                        again):
    """The RegisterAccount of both posts is the same (guarded roles are left out of it), so the second is its
    original answer; what the second files is at most one pending request, which another admin still decides."""
    client, command_id = client_as("admin"), new_command_id()
    provision(client, command_id=command_id, roles=first)
    page = provision(client, command_id=command_id, roles=again).content.decode()
    assert "already submitted: this is the original answer" in page and "COMMAND_ID_CONFLICT" not in page
    assert ledger.get(STATE, "actor/ops-3").data == {"roles": ["ops"], "status": "active"}
    pending = [change for change in changes_of(ledger, "ops-3") if change["status"] == "pending"]
    assert len(pending) <= 1 and all(change["requested_by"] == STAFF["admin"] for change in pending)
    assert len(changes_of(ledger, "ops-3")) == len(pending)


def test_a_provisioning_form_posted_again_after_the_request_was_declined_does_not_say_it_awaits_approval(
        client_as, ledger):
    """A provisioning form answered again after its staff change was declined says so, rather than that it awaits
    approval."""
    client, command_id = client_as("admin"), new_command_id()
    provision(client, command_id=command_id, roles=["ops", "finance"])
    [change] = changes_of(ledger, "ops-3")
    declined = commands.submit(STAFF["admin2"], new_command_id(),
                               staff_changes.decide(change["change_id"], "decline", "requested_in_error"))
    assert declined.accepted and changes_of(ledger, "ops-3")[0]["status"] == "declined"
    page = provision(client, command_id=command_id, roles=["ops", "finance"]).content.decode()
    assert "approves it under Staff changes" not in page and "declined" in page


def test_the_prepare_screens_box_for_a_recipient_is_labelled_with_its_name_and_id(client_as, ledger):
    page = client_as("finance").get("/ledger/payouts/prepare/").content.decode()
    labels = re.findall(r'class="visually-hidden">Pay ([^<]+)</label>', page)
    assert labels and all(re.fullmatch(r".+ \((demo-(artist|operator)-\d\d)\)", label) for label in labels)
    assert {re.search(r"\((demo-[a-z]+-\d\d)\)$", label)[1]: label.rsplit(" (", 1)[0] for label in labels} == {
        recipient_id: escape(DISPLAY_NAMES[recipient_id]) for recipient_id in
        (re.search(r"\((demo-[a-z]+-\d\d)\)$", label)[1] for label in labels)}
