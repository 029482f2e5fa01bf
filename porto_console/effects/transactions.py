"""The transactions workers sign: building, signing, hashing and decoding BCS entry-function calls.

A payment is ``0x1::primary_fungible_store::transfer<0x1::fungible_asset::Metadata>``
of the USDC metadata object, in integer micro-units, to the recipient's
address. A commitment is ``<committer>::commitments::anchor(hash, count,
journal_root, journal_size)``: a frozen batch's 32-byte artifact hash (for a
statement index, its statement tree's root) and its item count, and the
ledger journal's Merkle root and size when it was signed, sent to the
``commitments`` module the committer's own account publishes. The transaction hash is Aptos's: SHA3-256 of the ``APTOS::Transaction``
prefix hash, the ``UserTransaction`` variant byte and the signed BCS bytes, so
the hash commits to every argument, the sequence and the expiry.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from aptos_sdk.account_address import AccountAddress
from aptos_sdk.authenticator import Authenticator
from aptos_sdk.bcs import Deserializer, Serializer
from aptos_sdk.ed25519 import PrivateKey
from aptos_sdk.transactions import (
    EntryFunction, RawTransaction, SignedTransaction, TransactionArgument, TransactionPayload,
)
from aptos_sdk.type_tag import StructTag, TypeTag

from ledger_engine.open_json import Document

TRANSFER_MODULE = "0x1::primary_fungible_store"
TRANSFER_FUNCTION = "transfer"
METADATA_TYPE = "0x1::fungible_asset::Metadata"
USER_TRANSACTION_VARIANT = b"\x00"
_TRANSACTION_PREFIX = hashlib.sha3_256(b"APTOS::Transaction").digest()
U64_MAX = 2**64 - 1
EMPTY_TREE_ROOT = hashlib.sha256().hexdigest()
COMMITMENTS_MODULE = "commitments"
ANCHOR_FUNCTION = "anchor"


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

    def entry_function(self) -> EntryFunction:
        if type(self.amount) is not int or not 0 < self.amount <= U64_MAX:
            raise ValueError(f"a transfer amount is a positive u64 of micro-units, not {self.amount!r}")
        return EntryFunction.natural(
            TRANSFER_MODULE,
            TRANSFER_FUNCTION,
            [TypeTag(StructTag.from_str(METADATA_TYPE))],
            [
                TransactionArgument(AccountAddress.from_str(self.asset_metadata), Serializer.struct),
                TransactionArgument(AccountAddress.from_str(self.recipient), Serializer.struct),
                TransactionArgument(self.amount, Serializer.u64),
            ],
        )

    def payload_json(self) -> Document:
        return transfer_payload(self.asset_metadata, self.recipient, self.amount)


@dataclass(frozen=True, slots=True)
class CommitmentTerms:
    """Everything a signed commitment commits to: a batch's artifact hash (64 hex digits) and item count, and
    the journal tree (root and size) it anchors with them."""

    sender: str
    sequence_number: int
    artifact_hash: str
    count: int
    expiration_secs: int
    chain_id: int
    max_gas_amount: int
    gas_unit_price: int
    journal_size: int = 0
    journal_root: str = EMPTY_TREE_ROOT

    def entry_function(self) -> EntryFunction:
        for name, digits in (("artifact hash", self.artifact_hash), ("journal root", self.journal_root)):
            if len(digits) != 64 or digits != digits.lower():
                raise ValueError(f"a commitment's {name} is 64 lowercase hex digits, not {digits!r}")
        for name, number in (("count", self.count), ("journal size", self.journal_size)):
            if type(number) is not int or not 0 <= number <= U64_MAX:
                raise ValueError(f"a commitment's {name} is a u64, not {number!r}")
        return EntryFunction.natural(
            f"{self.sender}::{COMMITMENTS_MODULE}",
            ANCHOR_FUNCTION,
            [],
            [
                TransactionArgument(bytes.fromhex(self.artifact_hash), Serializer.to_bytes),
                TransactionArgument(self.count, Serializer.u64),
                TransactionArgument(bytes.fromhex(self.journal_root), Serializer.to_bytes),
                TransactionArgument(self.journal_size, Serializer.u64),
            ],
        )

    def payload_json(self) -> Document:
        return commitment_payload(self.sender, self.artifact_hash, self.count, self.journal_root, self.journal_size)


Terms = TransferTerms | CommitmentTerms
TermsT = TypeVar("TermsT", bound=Terms)


def transfer_payload(asset_metadata: str, recipient: str, amount: int | str) -> Document:
    """A transfer's call as an Aptos node shows it in JSON."""
    return {"type": "entry_function_payload", "function": f"{TRANSFER_MODULE}::{TRANSFER_FUNCTION}",
            "type_arguments": [METADATA_TYPE], "arguments": [{"inner": asset_metadata}, recipient, str(amount)]}


def commitment_payload(sender: str, artifact_hash: str, count: int, journal_root: str | None,
                       journal_size: int | None) -> Document:
    """A commitment's call as an Aptos node shows it in JSON (without the journal tree when it named none)."""
    arguments = ["0x" + artifact_hash, str(count)]
    if journal_root is not None:
        arguments += ["0x" + journal_root, str(journal_size)]
    return {"type": "entry_function_payload", "function": f"{sender}::{COMMITMENTS_MODULE}::{ANCHOR_FUNCTION}",
            "type_arguments": [], "arguments": arguments}


_HEX = re.compile(r"0x[0-9a-fA-F]{1,64}")


def long_address(text: str) -> str:
    """An address or 32-byte value in the long form: nodes may show ``0x1`` for ``0x000…01``."""
    return "0x" + text[2:].lower().zfill(64) if _HEX.fullmatch(text) else text


def same_call(shown: Document | None, signed: Document) -> bool:
    """Whether a node's JSON payload is the signed call: the same function, type arguments and arguments."""
    if not isinstance(shown, dict):
        return False
    return all(_spelled_long(shown.get(name)) == _spelled_long(signed[name])
               for name in ("function", "type_arguments", "arguments"))


def _spelled_long(value: Any) -> Any:
    if isinstance(value, list):
        return [_spelled_long(item) for item in value]
    if isinstance(value, dict):
        return {name: _spelled_long(item) for name, item in value.items()}
    if isinstance(value, str):
        return "::".join(long_address(part) for part in value.split("::"))
    return value


@dataclass(frozen=True, slots=True)
class SignedTransfer(Generic[TermsT]):
    """Signed bytes and what they say: a transfer's or a commitment's terms."""

    terms: TermsT
    signed_bytes: bytes
    transaction_hash: str

    @property
    def is_commitment(self) -> bool:
        return isinstance(self.terms, CommitmentTerms)

    @property
    def sender(self) -> str:
        return self.terms.sender

    @property
    def sequence_number(self) -> int:
        return self.terms.sequence_number

    @property
    def expiration_secs(self) -> int:
        return self.terms.expiration_secs

    def payload_json(self) -> Document:
        return self.terms.payload_json()


def address_text(address: AccountAddress) -> str:
    """The long form ``0x`` + 64 hex digits, the ledger's ChainAddress spelling."""
    return "0x" + address.address.hex()


def transaction_hash(signed_bytes: bytes) -> str:
    return "0x" + hashlib.sha3_256(_TRANSACTION_PREFIX + USER_TRANSACTION_VARIANT + signed_bytes).hexdigest()


def sign_transfer(key: PrivateKey, terms: TermsT) -> SignedTransfer[TermsT]:
    """Build and sign the transaction; Ed25519 is deterministic, so equal terms give equal bytes."""
    sender = AccountAddress.from_key(key.public_key())
    if address_text(sender) != terms.sender:
        raise ValueError(f"the signing key belongs to {address_text(sender)}, not {terms.sender}")
    raw = RawTransaction(
        sender,
        terms.sequence_number,
        TransactionPayload(terms.entry_function()),
        terms.max_gas_amount,
        terms.gas_unit_price,
        terms.expiration_secs,
        terms.chain_id,
    )
    signed = SignedTransaction(raw, raw.sign(key)).bytes()
    return SignedTransfer(terms, signed, transaction_hash(signed))


class NotATransfer(ValueError):
    """Bytes that are not a correctly signed fungible-asset transfer or commitment."""


def decode_transfer(signed_bytes: bytes) -> SignedTransfer[Terms]:
    """Decode and verify signed bytes: the signature, the sender's key and a transfer or commitment payload."""
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
    if raw.payload.variant != TransactionPayload.SCRIPT_FUNCTION:
        raise NotATransfer("the payload is not an entry-function call")
    call = raw.payload.value
    terms = _commitment_terms(raw, call) if call.function == ANCHOR_FUNCTION else _transfer_terms(raw, call)
    return SignedTransfer(terms, signed_bytes, transaction_hash(signed_bytes))


def _transfer_terms(raw: RawTransaction, call: EntryFunction) -> TransferTerms:
    if (str(call.module) != TRANSFER_MODULE or call.function != TRANSFER_FUNCTION
            or [str(tag) for tag in call.ty_args] != [METADATA_TYPE] or len(call.args) != 3):
        raise NotATransfer("the payload is not a fungible-asset transfer")
    metadata, recipient, amount = (Deserializer(argument) for argument in call.args)
    return TransferTerms(
        sender=address_text(raw.sender),
        sequence_number=raw.sequence_number,
        asset_metadata=address_text(AccountAddress.deserialize(metadata)),
        recipient=address_text(AccountAddress.deserialize(recipient)),
        amount=amount.u64(),
        **_common_terms(raw),
    )


def _commitment_terms(raw: RawTransaction, call: EntryFunction) -> CommitmentTerms:
    if (str(call.module) != f"{raw.sender}::{COMMITMENTS_MODULE}" or call.ty_args or len(call.args) != 4):
        raise NotATransfer("the payload is not a commitment to the sender's own commitments module")
    artifact_hash, count, journal_root, journal_size = (Deserializer(argument) for argument in call.args)
    hash_bytes, root_bytes = artifact_hash.to_bytes(), journal_root.to_bytes()
    if len(hash_bytes) != 32 or len(root_bytes) != 32:
        raise NotATransfer(f"a commitment anchors 32-byte hashes, not {len(hash_bytes)} and {len(root_bytes)} bytes")
    return CommitmentTerms(
        sender=address_text(raw.sender),
        sequence_number=raw.sequence_number,
        artifact_hash=hash_bytes.hex(),
        count=count.u64(),
        journal_size=journal_size.u64(),
        journal_root=root_bytes.hex(),
        **_common_terms(raw),
    )


def _common_terms(raw: RawTransaction) -> dict[str, int]:
    return {"expiration_secs": raw.expiration_timestamps_secs, "chain_id": raw.chain_id,
            "max_gas_amount": raw.max_gas_amount, "gas_unit_price": raw.gas_unit_price}
