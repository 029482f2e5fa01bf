"""A recipient's display name: an artist or an operator may be registered with the public name it is paid under,
kept on its account in its normal form, restated (or left out, and so removed) by each registration, refused for
any other kind of account and when it is not one line of 1 to 100 visible characters (NFC); and its statements
name it, while an unnamed recipient's statements keep the bytes they always had."""

from __future__ import annotations

import unicodedata

import orjson
import pytest

from ledger_engine.canonical import canonical_bytes
from ledger_engine.domain.commands.accounts import MAX_DISPLAY_NAME_CHARS
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.merkle import verify_statement_file
from ledger_engine.merkle.statement import check_statement_file, statement_file_bytes
from ledger_engine.selectors.statement_index import statement_document
from tests.engine.test_rules_accounts import change
from tests.merkle import checkpoint_keys
from tests.money_allocation.world import MoneyWorld, fixture_commands
from tests.money_payouts.test_statement_titles import anchored_statements
from tests.money_payouts.test_statement_trees import prepare
from tests.money_payouts.world import RECIPIENTS, PayoutWorld
from tests.support import payloads
from tests.support.outcomes import assert_accepted, assert_refused, assert_rejected
from tests.support.store import owner_dump

DECOMPOSED = unicodedata.normalize("NFD", "Inês Luar")
RIGHT_TO_LEFT = "ليلى النيل"
BAD_NAMES = {
    "empty": "",
    "too long": "x" * (MAX_DISPLAY_NAME_CHARS + 1),
    "leading space": " Aurora Vale",
    "trailing space": "Aurora Vale ",
    "line feed inside": "Aurora\nVale",
    "line separator": "Aurora\u2028Vale",
    "unassigned code point": "Aurora Vale\u0378",
    "not a string": 15,
    # An export is plain text: an open override there reverses the amounts beside the name.
    "right-to-left override": "Fado \u202eoC",
    "right-to-left isolate": "\u2067Fado\u2069",
    "zero-width space": "Aurora\u200b Vale",
    "soft hyphen alone": "\u00ad",
    "five combining marks on one letter": "Z\u0363\u0364\u0365\u0366\u0367ed",
}
GOOD_NAMES = {
    "longest": "x" * MAX_DISPLAY_NAME_CHARS,
    "right to left": RIGHT_TO_LEFT,
    "right-to-left mark": "Fado\u200f",
    "zero-width joiner of an emoji": "DJ \U0001f469\u200d\U0001f3a4",
    "four combining marks on one letter": "Z\u0363\u0364\u0365\u0366ed",
}


def register(envelopes, account_id: str, kind: str = "artist", **fields) -> dict:
    """A new account of a kind that holds no roles."""
    return envelopes.account(account_id, kind, **fields)


def account(owner, account_id: str) -> dict:
    return owner.get("state", f"account/{account_id}").data


@pytest.mark.parametrize("kind", ["artist", "operator"])
def test_a_recipient_registered_with_a_name_keeps_it_in_its_normal_form(owner, envelopes, kind):
    assert_accepted(owner, register(envelopes, "rcpt-1", kind, display_name=DECOMPOSED,
                                    payout_address=payloads.address("rcpt-1")))
    stored = account(owner, "rcpt-1")
    assert stored["display_name"] == unicodedata.normalize("NFC", DECOMPOSED) != DECOMPOSED


def test_a_recipient_registered_without_a_name_has_no_name_key(owner, envelopes):
    assert_accepted(owner, register(envelopes, "art-1"))
    assert "display_name" not in account(owner, "art-1")


def test_a_registration_renames_and_one_without_the_name_removes_it(owner, envelopes):
    assert_accepted(owner, register(envelopes, "art-1", display_name="Aurora Vale",
                                    payout_address=payloads.address("art-1")))
    assert_accepted(owner, change(envelopes, "art-1", kind="artist", revision=1, display_name="Aurora V."))
    assert account(owner, "art-1")["display_name"] == "Aurora V."
    assert_accepted(owner, change(envelopes, "art-1", kind="artist", revision=2, status="deactivated",
                                  display_name="Aurora V."))
    assert (account(owner, "art-1")["status"], account(owner, "art-1")["display_name"]) == ("deactivated", "Aurora V.")
    assert_accepted(owner, change(envelopes, "art-1", kind="artist", revision=3))
    assert "display_name" not in account(owner, "art-1")
    assert owner.get("state", "recipient/art-1") is not None  # the payout address is not restated, and stays


def test_renaming_needs_the_expected_revision(owner, envelopes):
    assert_accepted(owner, register(envelopes, "art-1", display_name="Aurora Vale"))
    assert_rejected(owner, change(envelopes, "art-1", kind="artist", revision=None, display_name="Someone Else"),
                    "STALE_REVISION")
    assert account(owner, "art-1")["display_name"] == "Aurora Vale"


@pytest.mark.parametrize("taken", ["Aurora Vale", "AURORA VALE", "\uff21\uff55\uff52\uff4f\uff52\uff41 Vale"],
                         ids=["same", "other case", "full width"])
def test_no_two_recipients_share_a_name_however_cased_or_composed(owner, envelopes, taken):
    assert_accepted(owner, register(envelopes, "art-1", display_name="Aurora Vale"))
    assert_rejected(owner, register(envelopes, "art-2", display_name=taken), "ALREADY_EXISTS")
    assert owner.get("state", "account/art-2") is None


def test_a_rename_frees_the_old_name_for_another_recipient(owner, envelopes):
    assert_accepted(owner, register(envelopes, "art-1", display_name="Aurora Vale"))
    assert_accepted(owner, change(envelopes, "art-1", kind="artist", revision=1, display_name="AURORA VALE"))
    assert_accepted(owner, change(envelopes, "art-1", kind="artist", revision=2, display_name="Aurora V."))
    assert_accepted(owner, register(envelopes, "art-2", display_name="Aurora Vale"))
    assert account(owner, "art-2")["display_name"] == "Aurora Vale"


def test_a_name_is_never_another_accounts_id(owner, envelopes):
    assert_accepted(owner, register(envelopes, "art-1"))
    assert_rejected(owner, register(envelopes, "art-2", display_name="art-1"), "ALREADY_EXISTS")
    assert_accepted(owner, register(envelopes, "art-3", display_name="art-3"))  # its own ID misleads nobody


@pytest.mark.parametrize("kind, roles", [("staff", ["finance"]), ("worker", ["ingest"]), ("listener", [])])
def test_only_an_artist_or_an_operator_has_a_name(owner, envelopes, kind, roles):
    assert_refused(owner, envelopes.account("acct-1", kind, roles, display_name="Aurora Vale"),
                   ErrorCode.INVALID_PAYLOAD)
    assert owner.get("state", "account/acct-1") is None


def test_a_name_is_not_added_to_an_existing_account_of_another_kind(owner, envelopes):
    assert_accepted(owner, register(envelopes, "lst-1", "listener"))
    assert_refused(owner, change(envelopes, "lst-1", kind="listener", display_name="Aurora Vale"),
                   ErrorCode.INVALID_PAYLOAD)
    assert "display_name" not in account(owner, "lst-1")


@pytest.mark.parametrize("name", BAD_NAMES.values(), ids=list(BAD_NAMES))
def test_a_bad_name_is_refused_and_writes_nothing(owner, envelopes, name):
    envelope = register(envelopes, "art-1", display_name=name)
    assert_refused(owner, envelope, ErrorCode.INVALID_PAYLOAD)
    with pytest.raises(LedgerError) as raised:
        owner.submit(envelope)
    assert raised.value.detail.startswith("display_name")


def test_a_bad_name_leaves_a_named_recipients_name_as_it_was(owner, envelopes):
    assert_accepted(owner, register(envelopes, "art-1", display_name="Aurora Vale"))
    before = owner_dump(owner)
    for name in BAD_NAMES.values():
        assert_refused(owner, change(envelopes, "art-1", kind="artist", display_name=name), ErrorCode.INVALID_PAYLOAD)
    assert owner_dump(owner) == before


@pytest.mark.parametrize("name", GOOD_NAMES.values(), ids=list(GOOD_NAMES))
def test_a_name_of_any_script_up_to_the_longest_is_kept(owner, envelopes, name):
    assert_accepted(owner, register(envelopes, "opr-1", "operator", display_name=name))
    assert account(owner, "opr-1")["display_name"] == name


@pytest.mark.parametrize("terms", [{"kind": "deactivate"}, {"kind": "grant_role", "role": "auditor"}])
def test_a_staff_change_never_reaches_a_named_recipient(owner, envelopes, terms):
    """Staff changes are for staff accounts: a recipient's name and status change only by its registration."""
    assert_accepted(owner, register(envelopes, "art-1", display_name="Aurora Vale"))
    request = {"change_id": "change-1", "change": {**terms, "account_id": "art-1"}}
    assert_rejected(owner, envelopes("RequestStaffChange", request), "INVALID_STATE")
    assert account(owner, "art-1")["display_name"] == "Aurora Vale"


# Statements: the index reads each recipient's name from its account at the boundary it is built at.

NAMES = {"artist-a": "<img src=x onerror=alert(1)> Fado & Co", "operator-x": RIGHT_TO_LEFT}  # the others have none


@pytest.fixture
def named(owner, envelopes) -> PayoutWorld:
    """The payout world, artist-a and operator-x then given names; the allocation batch anchored."""
    with fixture_commands():
        world = PayoutWorld(MoneyWorld(owner, envelopes).setup()).setup()
    for recipient, name in NAMES.items():
        kind = "artist" if recipient.startswith("artist") else "operator"
        payload = {"account_id": recipient, "kind": kind, "identity_digest": envelopes.digest("id", recipient),
                   "roles": [], "display_name": name}
        world.money.submit_ok("RegisterAccount", payload,
                              expected=[world.revision("state", f"account/{recipient}")])
    world.anchor("allocation-batch-9", world.batch("allocation-batch-9", "allocation"))
    return world


def test_the_index_names_each_named_recipient_and_no_other(named: PayoutWorld):
    _, artifact = prepare(named)
    documents = orjson.loads(artifact)["statements"]
    assert sorted(document["recipient_id"] for document in documents) == sorted(RECIPIENTS)
    for document in documents:
        assert document.get("recipient_name") == NAMES.get(document["recipient_id"]), document["recipient_id"]


def test_a_named_recipients_statement_file_verifies_and_a_changed_name_does_not(named: PayoutWorld):
    files = anchored_statements(named)
    pinned = checkpoint_keys.signer().verifier_key
    for document in files:
        verdict = verify_statement_file(statement_file_bytes(document), pinned)
        assert verdict["verdict"] == "verified"
        assert document["statement"].get("recipient_name") == NAMES.get(document["statement"]["recipient_id"])
    renamed = next(document for document in files if "recipient_name" in document["statement"])
    renamed["statement"]["recipient_name"] = "Someone Else"
    refused = check_statement_file(statement_file_bytes(renamed), pinned)
    assert (refused["verdict"], refused["reason"], refused["field"]) == ("failed", "LEAF_MISMATCH", "statement")


def test_without_a_name_a_statement_is_the_leaf_it_was_before_names():
    batch = {"batch_id": "allocation-batch-9", "window_start_ms": 0, "window_end_ms": 10}
    lines = [{"line_id": "l-1", "day": 1, "role": "artist", "amount": "5", "status": "payable", "work_id": "work-3",
              "listener_id": "listener-1", "budget_id": "budget-1"}]
    before = statement_document("proof-0123456789abcdef", "artist-b", batch, lines)
    assert statement_document("proof-0123456789abcdef", "artist-b", batch, lines, name=None) == before
    assert "recipient_name" not in before
    named_statement = statement_document("proof-0123456789abcdef", "artist-b", batch, lines, name=RIGHT_TO_LEFT)
    assert named_statement == {**before, "recipient_name": RIGHT_TO_LEFT}
    assert canonical_bytes(named_statement) != canonical_bytes(before)
