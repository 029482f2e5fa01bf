"""An attempt's terms are checked against its signed bytes at the API, where the bytes are: the ledger cannot
read a transaction, and a signer stating the payment's frozen terms over bytes that pay someone else would
have the chain's confirmation of that transfer settle the payment."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from aptos_sdk.account_address import AccountAddress
from aptos_sdk.ed25519 import PrivateKey

from ledger_engine.errors import ErrorCode, LedgerError
from porto_console.effects.transactions import SignedTransfer, TransferTerms, address_text, sign_transfer
from porto_console.internal_api.commands import require_signed_bytes_say
from porto_console.internal_api.credentials import commands_for_role
from porto_console.ledger import gateway
from tests.console.test_internal_api import COMMANDS, Worker, ledger  # noqa: F401 (its fixture)
from tests.effects.conftest import CHAIN_ID, PAYER_KEY, USDC
from tests.support.payloads import address

KEY = PrivateKey.from_str(PAYER_KEY, strict=False)
TERMS = TransferTerms(sender=address_text(AccountAddress.from_key(KEY.public_key())), sequence_number=3,
                      asset_metadata=USDC, recipient=address("artist-a"), amount=112_500,
                      expiration_secs=1_800_000_000, chain_id=CHAIN_ID, max_gas_amount=2_000, gas_unit_price=100)


def attempt_of(transfer: SignedTransfer) -> dict:
    """The attempt fields a signer states, as the payment session states them for ``transfer``."""
    terms = transfer.terms
    return {"payout_address": terms.recipient, "amount": str(terms.amount), "sender_address": terms.sender,
            "sender_sequence": terms.sequence_number, "expires_at_ms": terms.expiration_secs * 1000,
            "transaction_hash": transfer.transaction_hash}


def test_an_attempt_stating_what_its_bytes_say_passes():
    honest = sign_transfer(KEY, TERMS)
    require_signed_bytes_say(attempt_of(honest), honest.signed_bytes)


@pytest.mark.parametrize("signed_instead", [
    {"recipient": address("thief")}, {"amount": 112_501}, {"sequence_number": 7}, {"expiration_secs": 1_900_000_000},
], ids=["another recipient", "another amount", "another sequence", "another expiry"])
def test_bytes_that_do_something_else_than_the_attempt_states_are_refused(signed_instead):
    stated = attempt_of(sign_transfer(KEY, TERMS))
    other = sign_transfer(KEY, dataclasses.replace(TERMS, **signed_instead))
    with pytest.raises(LedgerError) as refused:
        require_signed_bytes_say({**stated, "transaction_hash": other.transaction_hash}, other.signed_bytes)
    assert refused.value.code == ErrorCode.CONFLICTING_EVIDENCE


def test_a_transaction_hash_that_is_not_the_bytes_own_is_refused():
    honest = sign_transfer(KEY, TERMS)
    other = sign_transfer(KEY, dataclasses.replace(TERMS, sequence_number=4))
    with pytest.raises(LedgerError) as refused:
        require_signed_bytes_say({**attempt_of(honest), "transaction_hash": other.transaction_hash},
                                 honest.signed_bytes)
    assert refused.value.code == ErrorCode.CONFLICTING_EVIDENCE


def test_bytes_that_are_no_signed_transfer_are_refused():
    honest = sign_transfer(KEY, TERMS)
    tampered = honest.signed_bytes[:-1] + bytes([honest.signed_bytes[-1] ^ 1])
    for signed_bytes in (b"not a transaction", tampered):
        with pytest.raises(LedgerError) as refused:
            require_signed_bytes_say(attempt_of(honest), signed_bytes)
        assert refused.value.code == ErrorCode.CONFLICTING_EVIDENCE


@pytest.mark.django_db
def test_the_api_refuses_such_an_attempt_before_the_ledger_sees_it(ledger):  # noqa: F811
    stated = attempt_of(sign_transfer(KEY, TERMS))
    stolen = sign_transfer(KEY, dataclasses.replace(TERMS, recipient=address("thief")))
    digest = gateway().evidence.put(stolen.signed_bytes)
    head = ledger.head()
    response = Worker.issued("signer-1", commands_for_role("signer")).post(COMMANDS, {
        "command_id": str(uuid.uuid4()), "command_type": "RecordSignedAttempt", "evidence_hashes": [digest],
        "payload": {**stated, "transaction_hash": stolen.transaction_hash, "payment_id": "run-1.artist-a",
                    "attempt_id": "attempt-1", "claimed_by": "dispatcher-1", "signed_bytes_ref": f"evidence:{digest}",
                    "signed_bytes_hash": digest}})
    assert (response.status_code, response.json()["code"]) == (422, "CONFLICTING_EVIDENCE")
    assert ledger.head() == head


def stored_envelopes() -> list:
    return [path for path in gateway().envelopes.root.rglob("*") if path.is_file()]


@pytest.mark.django_db
@pytest.mark.parametrize("signed_bytes", ["never stored", "another recipient"])
def test_an_attempt_refused_at_the_api_stores_no_envelope(ledger, signed_bytes):  # noqa: F811
    stated = attempt_of(sign_transfer(KEY, TERMS))
    stolen = sign_transfer(KEY, dataclasses.replace(TERMS, recipient=address("thief")))
    digest = "ab" * 32 if signed_bytes == "never stored" else gateway().evidence.put(stolen.signed_bytes)
    before, head = stored_envelopes(), ledger.head()
    response = Worker.issued("signer-1", commands_for_role("signer")).post(COMMANDS, {
        "command_id": str(uuid.uuid4()), "command_type": "RecordSignedAttempt",
        "evidence_hashes": [] if signed_bytes == "never stored" else [digest],
        "payload": {**stated, "transaction_hash": stolen.transaction_hash, "payment_id": "run-1.artist-a",
                    "attempt_id": "attempt-1", "claimed_by": "signer-1", "signed_bytes_ref": f"evidence:{digest}",
                    "signed_bytes_hash": digest}})
    expected = "INVALID_REFERENCE" if signed_bytes == "never stored" else "CONFLICTING_EVIDENCE"
    assert (response.status_code, response.json()["code"]) == (422, expected)
    assert stored_envelopes() == before and ledger.head() == head
