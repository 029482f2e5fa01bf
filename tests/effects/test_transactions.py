"""Signed transfers: real BCS, deterministic signatures, a hash that binds every term."""

from __future__ import annotations

import dataclasses
import hashlib

import pytest
from aptos_sdk.bcs import Deserializer
from aptos_sdk.ed25519 import PrivateKey
from aptos_sdk.transactions import SignedTransaction

from porto_console.effects.signer import Signer
from porto_console.effects.transactions import NotATransfer, decode_transfer, transaction_hash
from tests.effects.conftest import terms


def test_signed_transfer_round_trips_through_bcs_and_verifies(signer):
    signed = signer.sign(terms(signer, 7, amount=1_234_567))
    decoded = decode_transfer(signed.signed_bytes)
    assert decoded.terms == signed.terms and decoded.transaction_hash == signed.transaction_hash
    sdk_view = SignedTransaction.deserialize(Deserializer(signed.signed_bytes))
    assert sdk_view.verify() and sdk_view.transaction.sequence_number == 7


def test_signing_is_deterministic_and_the_hash_covers_every_term(signer):
    base = terms(signer, 7)
    assert signer.sign(base).signed_bytes == signer.sign(base).signed_bytes
    hashes = {signer.sign(base).transaction_hash}
    for change in ({"sequence_number": 8}, {"amount": 250_001}, {"recipient": "0x" + "cd" * 32},
                   {"expiration_secs": base.expiration_secs + 1}, {"chain_id": 5}):
        hashes.add(signer.sign(dataclasses.replace(base, **change)).transaction_hash)
    assert len(hashes) == 6


def test_hash_is_the_aptos_user_transaction_hash(signer):
    signed = signer.sign(terms(signer, 1))
    prefix = hashlib.sha3_256(b"APTOS::Transaction").digest()
    assert transaction_hash(signed.signed_bytes) == "0x" + hashlib.sha3_256(prefix + b"\x00" + signed.signed_bytes).hexdigest()


@pytest.mark.parametrize("amount", [0, -1, 2**64, 1.5, "10"])
def test_amount_must_be_a_positive_u64_integer(signer, amount):
    with pytest.raises(ValueError):
        signer.sign(terms(signer, 1, amount=amount))


def test_a_key_cannot_sign_for_another_sender(signer):
    other = dataclasses.replace(terms(signer, 1), sender="0x" + "dd" * 32)
    with pytest.raises(ValueError, match="belongs to"):
        signer.sign(other)


def test_tampered_or_foreign_bytes_are_refused(signer):
    signed = bytearray(signer.sign(terms(signer, 1)).signed_bytes)
    signed[60] ^= 1
    with pytest.raises(NotATransfer):
        decode_transfer(bytes(signed))
    with pytest.raises(NotATransfer):
        decode_transfer(b"\x00" * 40)
    with pytest.raises(NotATransfer, match="trailing"):
        decode_transfer(signer.sign(terms(signer, 1)).signed_bytes + b"\x00")


def test_a_random_key_gives_its_own_sender_address():
    first, second = Signer(PrivateKey.random()), Signer(PrivateKey.random())
    assert first.address != second.address and len(first.address) == 66
