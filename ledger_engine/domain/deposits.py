"""Deposit identity: one on-chain deposit is one funding lot, however it is spelled.

A deposit is named by its transaction hash and the index of its deposit event
in that transaction; its chain (from a closed set) is recorded but names
nothing, since a transaction hash is a hash of the transaction, chain included,
and a label must not make one transfer two deposits. Hex has many spellings of
the same bytes, so the hash is normalised to Aptos's canonical encoding, ``0x``
and 64 lowercase hex digits, before it names anything; the index is an
integer. Two sentinels guard a lot:

    unique/deposit/<0x hash>:<event_index>       {"lot_id"}
    unique/deposit_evidence/<evidence digest>    {"lot_id"}

so neither the same deposit nor the same piece of evidence funds two lots.
The full conservation check holds every lot to both (``lot_is_its_own_canonical_deposit``,
``deposits_fund_one_lot_each`` and ``deposit_sentinels_name_existing_lots`` in invariants.py):
a lot without them is a phantom, and blocks payouts.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Mapping, TypedDict, get_args

from pydantic import Field

from ledger_engine.keys import key
from ledger_engine.open_json import RecordData

DepositChain = Literal["aptos", "aptos-testnet", "simulated"]
CHAINS = frozenset(get_args(DepositChain))
# Any spelling of 32 bytes of hex, with or without Aptos's 0x; normalised by canonical_transaction_hash.
SpelledTransactionHash = Annotated[str, Field(pattern=r"^(0x)?[0-9a-fA-F]{64}$")]
CANONICAL_HASH = re.compile(r"0x[0-9a-f]{64}")
UNIT_PREFIX = "deposit/"
EVIDENCE_PREFIX = "deposit_evidence/"


class DepositSentinel(TypedDict):
    """Either sentinel of a lot: the lot its deposit funds."""

    lot_id: str


def canonical_transaction_hash(spelled: str) -> str:
    digits = spelled[2:] if spelled.startswith("0x") else spelled
    assert len(digits) == 64, spelled
    return "0x" + digits.lower()


def canonical_deposit(deposit: Mapping[str, Any]) -> RecordData:
    """The deposit as the ledger records it: canonical hash, integer index."""
    return {**deposit, "transaction_hash": canonical_transaction_hash(deposit["transaction_hash"])}


def is_canonical(deposit: Mapping[str, Any]) -> bool:
    """Whether a recorded deposit names its chain, hash and index the one way the ledger spells them."""
    return (deposit.get("chain") in CHAINS and isinstance(deposit.get("transaction_hash"), str)
            and CANONICAL_HASH.fullmatch(deposit["transaction_hash"]) is not None
            and type(deposit.get("event_index")) is int)


def deposit_unit_key(deposit: Mapping[str, Any]) -> str:
    canonical = canonical_deposit(deposit)
    return key("deposit", f"{canonical['transaction_hash']}:{canonical['event_index']}")


def deposit_evidence_key(deposit: Mapping[str, Any]) -> str:
    return key("deposit_evidence", deposit["evidence_digest"])
