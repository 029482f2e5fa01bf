"""Keyed identity digests: an export holder cannot confirm a guessed email; earlier accounts keep their digests."""

from __future__ import annotations

import re

from ledger_engine.demo.builder import DEMO_IDENTITY_KEY
from ledger_engine.domain.identity import (
    KEYED, identity_matches, keyed_identity, keyed_identity_digest, unkeyed_identity_digest,
)
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE
from tests.support import cli

GUESSED_DOMAINS = ("porto.example", "porto.test", "demo.porto.invalid", "example.com")
STAFF_DIGEST = re.compile(r'"account_id":"([^"]+)","created_at_ms":\d+,"identity_digest":"([0-9a-f]{64})",'
                          r'"identity_scheme":"([^"]+)","kind":"staff"')


def staff_digests(export_dir) -> dict[str, tuple[str, str]]:
    """Every staff account's identity digest and scheme, as anyone holding the export reads them."""
    found: dict[str, tuple[str, str]] = {}
    for path in export_dir.iterdir():
        for account_id, digest, scheme in STAFF_DIGEST.findall(path.read_text(errors="replace")):
            found[account_id] = (digest, scheme)
    return found


def test_no_dictionary_over_likely_emails_recovers_a_staff_identity_from_an_export(demo_ledger, tmp_path):
    cli.export(demo_ledger.data, tmp_path / "export")
    digests = staff_digests(tmp_path / "export")
    assert len(digests) >= 5 and {scheme for _, scheme in digests.values()} == {KEYED}

    guesses = {f"{account_id}@{domain}" for account_id in digests for domain in GUESSED_DOMAINS}
    recovered = [account_id for account_id, (digest, _) in digests.items() for guess in guesses
                 if digest in (unkeyed_identity_digest("staff", guess),
                               keyed_identity_digest(b"a key the holder could guess", "staff", guess))]
    assert recovered == []
    # Only the key's holder, the console, links an account to its person.
    assert all(identity_matches({"identity_digest": digest, "identity_scheme": KEYED}, "staff",
                                f"{account_id}@demo.porto.invalid", DEMO_IDENTITY_KEY)
               for account_id, (digest, _) in digests.items())
    assert not any(DEMO_IDENTITY_KEY in path.read_bytes() for path in (tmp_path / "export").iterdir())


def test_an_account_provisioned_with_an_unkeyed_digest_keeps_it_and_is_still_recognised(owner, envelopes):
    unkeyed = unkeyed_identity_digest("staff", "ops9@porto.test")
    payload = {"account_id": "ops-9", "kind": "staff", "identity_digest": unkeyed, "roles": ["ops"]}
    assert owner.submit(envelopes("RegisterAccount", payload)).accepted
    account = owner.get(STATE, "account/ops-9")
    assert "identity_scheme" not in account.data  # written as every earlier history wrote it
    assert identity_matches(account.data, "staff", " OPS9@porto.test ", b"any key")

    rekeyed = {**payload, **keyed_identity(b"k" * 40, "staff", "ops9@porto.test"), "roles": ["auditor", "ops"]}
    expected = [{"cf": "state", "key": "account/ops-9", "revision": account.revision}]
    refused = owner.submit(envelopes("RegisterAccount", rekeyed, expected=expected))
    assert (refused.accepted, refused.code) == (False, ErrorCode.INVALID_STATE)
    kept = owner.submit(envelopes("RegisterAccount", {**payload, "roles": ["auditor", "ops"]}, expected=expected))
    assert kept.accepted and "identity_scheme" not in owner.get(STATE, "account/ops-9").data


def test_a_keyed_account_keeps_its_scheme_through_a_change_of_roles(owner, envelopes):
    identity = keyed_identity(b"k" * 40, "staff", "ops9@porto.test")
    payload = {"account_id": "ops-9", "kind": "staff", **identity, "roles": ["ops"]}
    assert owner.submit(envelopes("RegisterAccount", payload)).accepted
    account = owner.get(STATE, "account/ops-9")
    expected = [{"cf": "state", "key": "account/ops-9", "revision": account.revision}]
    unkeyed_again = {key: value for key, value in payload.items() if key != "identity_scheme"}
    refused = owner.submit(envelopes("RegisterAccount", unkeyed_again, expected=expected))
    assert (refused.accepted, refused.code) == (False, ErrorCode.INVALID_STATE)
    assert owner.submit(envelopes("RegisterAccount", {**payload, "status": "deactivated"}, expected=expected)).accepted
    assert owner.get(STATE, "account/ops-9").data["identity_scheme"] == KEYED
    assert not identity_matches(owner.get(STATE, "account/ops-9").data, "staff", "ops9@porto.test", b"j" * 40)
