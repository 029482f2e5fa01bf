"""Aptos fungible-asset transfers: building, signing, hashing and decoding BCS transactions.

A payment is ``0x1::primary_fungible_store::transfer<0x1::fungible_asset::Metadata>``
of the USDC metadata object, in integer micro-units, to the recipient's
address. The transaction hash is Aptos's: SHA3-256 of the ``APTOS::Transaction``
prefix hash, the ``UserTransaction`` variant byte and the signed BCS bytes, so
the hash commits to the recipient, the amount, the sequence and the expiry.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from aptos_sdk.account_address import AccountAddress
from aptos_sdk.authenticator import Authenticator
from aptos_sdk.bcs import Deserializer, Serializer
from aptos_sdk.ed25519 import PrivateKey
from aptos_sdk.transactions import (
    EntryFunction, RawTransaction, SignedTransaction, TransactionArgument, TransactionPayload,
)
from aptos_sdk.type_tag import StructTag, TypeTag

TRANSFER_MODULE = "0x1::primary_fungible_store"
TRANSFER_FUNCTION = "transfer"
METADATA_TYPE = "0x1::fungible_asset::Metadata"
USER_TRANSACTION_VARIANT = b"\x00"
_TRANSACTION_PREFIX = hashlib.sha3_256(b"APTOS::Transaction").digest()
U64_MAX = 2**64 - 1


@dataclass(frozen=True, slots=True)
class TransferTerms:
    """Everything a signed transfer commits to."""

    sender: str
    sequence_number: int
    asset_metadata: str
    recipient: str
    amount: int
    expiration_secs: int
    chain_id: int
    max_gas_amount: int
    gas_unit_price: int


@dataclass(frozen=True, slots=True)
class SignedTransfer:
    terms: TransferTerms
    signed_bytes: bytes
    transaction_hash: str


def address_text(address: AccountAddress) -> str:
    """The long form ``0x`` + 64 hex digits, the ledger's ChainAddress spelling."""
    return "0x" + address.address.hex()


def transaction_hash(signed_bytes: bytes) -> str:
    return "0x" + hashlib.sha3_256(_TRANSACTION_PREFIX + USER_TRANSACTION_VARIANT + signed_bytes).hexdigest()


def sign_transfer(key: PrivateKey, terms: TransferTerms) -> SignedTransfer:
    """Build and sign the transfer; Ed25519 is deterministic, so equal terms give equal bytes."""
    if type(terms.amount) is not int or not 0 < terms.amount <= U64_MAX:
        raise ValueError(f"a transfer amount is a positive u64 of micro-units, not {terms.amount!r}")
    sender = AccountAddress.from_key(key.public_key())
    if address_text(sender) != terms.sender:
        raise ValueError(f"the signing key belongs to {address_text(sender)}, not {terms.sender}")
    raw = RawTransaction(
        sender,
        terms.sequence_number,
        TransactionPayload(EntryFunction.natural(
            TRANSFER_MODULE,
            TRANSFER_FUNCTION,
            [TypeTag(StructTag.from_str(METADATA_TYPE))],
            [
                TransactionArgument(AccountAddress.from_str(terms.asset_metadata), Serializer.struct),
                TransactionArgument(AccountAddress.from_str(terms.recipient), Serializer.struct),
                TransactionArgument(terms.amount, Serializer.u64),
            ],
        )),
        terms.max_gas_amount,
        terms.gas_unit_price,
        terms.expiration_secs,
        terms.chain_id,
    )
    signed = SignedTransaction(raw, raw.sign(key)).bytes()
    return SignedTransfer(terms, signed, transaction_hash(signed))


class NotATransfer(ValueError):
    """Bytes that are not a correctly signed fungible-asset transfer."""


def decode_transfer(signed_bytes: bytes) -> SignedTransfer:
    """Decode and verify signed bytes: the signature, the sender's key and the transfer payload."""
    try:
        deserializer = Deserializer(signed_bytes)
        signed = SignedTransaction.deserialize(deserializer)
        if deserializer.remaining() != 0:
            raise NotATransfer("trailing bytes after the signed transaction")
    except NotATransfer:
        raise
    except Exception as error:
        raise NotATransfer(f"not a BCS signed transaction: {error}") from None
    if not signed.verify():
        raise NotATransfer("the signature does not verify")
    raw = signed.transaction
    if signed.authenticator.variant != Authenticator.ED25519:
        raise NotATransfer("only single Ed25519 senders are supported")
    if AccountAddress.from_key(signed.authenticator.authenticator.public_key) != raw.sender:
        raise NotATransfer("the signing key does not own the sender account")
    call = raw.payload.value
    if (raw.payload.variant != TransactionPayload.SCRIPT_FUNCTION
            or str(call.module) != TRANSFER_MODULE or call.function != TRANSFER_FUNCTION
            or [str(tag) for tag in call.ty_args] != [METADATA_TYPE] or len(call.args) != 3):
        raise NotATransfer("the payload is not a fungible-asset transfer")
    metadata, recipient, amount = (Deserializer(argument) for argument in call.args)
    terms = TransferTerms(
        sender=address_text(raw.sender),
        sequence_number=raw.sequence_number,
        asset_metadata=address_text(AccountAddress.deserialize(metadata)),
        recipient=address_text(AccountAddress.deserialize(recipient)),
        amount=amount.u64(),
        expiration_secs=raw.expiration_timestamps_secs,
        chain_id=raw.chain_id,
        max_gas_amount=raw.max_gas_amount,
        gas_unit_price=raw.gas_unit_price,
    )
    return SignedTransfer(terms, signed_bytes, transaction_hash(signed_bytes))
