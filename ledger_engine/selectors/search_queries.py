"""Records by what someone pastes: a run, payment, recipient, hold or correction ID, a transaction hash, a payout
address or a recipient's display name, whole or in part.

Each selector takes a ``LedgerView`` and the kinds its caller may open, and reads nothing of any other kind, so an
answer never depends on a record its reader could not open. A whole ID is one point read; a whole transaction
hash, payout address or display name walks the attempts or the recipients; a fragment walks each kind's keys and decodes only
the records it names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import chain
from typing import Callable, Iterable, Iterator

from ledger_engine.open_json import RecordData
from ledger_engine.storage.value_codec import decode_record
from ledger_engine.domain.schema.money_allocation import CORRECTION_REQUEST_PREFIX
from ledger_engine.domain.schema.money_payouts import ATTEMPT_PREFIX, PAYMENT_PREFIX, RUN_PREFIX, payment_key
from ledger_engine.keys import IDENTIFIER_PATTERN, key
from ledger_engine.layout import STATE
from ledger_engine.selectors.account_queries import display_names
from ledger_engine.selectors.payout_queries import RECIPIENT_PREFIX
from ledger_engine.selectors.view import LedgerView

# Each kind's records in state, in the order results are listed.
RECORD_PREFIXES = {"run": RUN_PREFIX, "payment": PAYMENT_PREFIX, "recipient": RECIPIENT_PREFIX,
                   "hold": key("hold") + "/", "correction": CORRECTION_REQUEST_PREFIX}
STATUS_FIELDS = {"run": "status", "payment": "state", "hold": "status", "correction": "status"}  # a recipient has none
BY_ID, BY_TRANSACTION_HASH, BY_PAYOUT_ADDRESS = "ID", "transaction hash", "payout address"
BY_DISPLAY_NAME = "display name"


@dataclass(frozen=True, slots=True)
class FoundRecord:
    kind: str  # a key of RECORD_PREFIXES
    record_id: str
    matched: str  # what the term matched: BY_ID, BY_TRANSACTION_HASH, BY_PAYOUT_ADDRESS or BY_DISPLAY_NAME
    status: str  # the record's own status or state; "" for a recipient


def exact_matches(view: LedgerView, term: str, kinds: Iterable[str], limit: int | None = None, *,
                  names: bool = True) -> list[FoundRecord]:
    """Up to ``limit`` records of ``kinds`` whose ID is ``term``, or whose transaction hash, payout address or (with
    ``names``) display name it is, in any case (Unicode's case folding: STRASSE is Straße)."""
    kinds, wanted = tuple(kinds), term.casefold()
    by_id = [found for found in (_by_id(view, kind, term) for kind in kinds) if found is not None]
    if by_id:  # no ID is also a hash or an address: the walk over attempts and recipients is spared
        return by_id
    return _first_of_each(_by_value(view, kinds, lambda value: value.casefold() == wanted, names), limit)


def partial_matches(view: LedgerView, fragment: str, kinds: Iterable[str], limit: int, *,
                    names: bool = True) -> list[FoundRecord]:
    """Up to ``limit`` records of ``kinds`` whose ID, transaction hash, payout address or (with ``names``) display
    name holds ``fragment`` (any case): IDs first, kind by kind in ID order."""
    kinds, wanted = tuple(kinds), fragment.casefold()
    by_id = chain.from_iterable(_ids_holding(view, kind, wanted) for kind in kinds)
    return _first_of_each(chain(by_id, _by_value(view, kinds, lambda value: wanted in value.casefold(), names)),
                          limit)


def _by_id(view: LedgerView, kind: str, record_id: str) -> FoundRecord | None:
    if not re.fullmatch(IDENTIFIER_PATTERN, record_id):
        return None
    record = view.record(RECORD_PREFIXES[kind] + record_id)
    return _found(kind, record_id, BY_ID, record.data) if record is not None else None


def _ids_holding(view: LedgerView, kind: str, wanted: str) -> Iterator[FoundRecord]:
    """The kind's records whose ID holds ``wanted`` (case folded), decoding only those."""
    prefix = RECORD_PREFIXES[kind]
    for raw_key, raw in view.scan(STATE, prefix.encode()):
        record_id = raw_key.decode()[len(prefix):]
        if wanted in record_id.casefold():
            yield _found(kind, record_id, BY_ID, decode_record(raw).data)


def _by_value(view: LedgerView, kinds: tuple[str, ...], matches: Callable[[str], bool],
              names: bool) -> Iterator[FoundRecord]:
    """Payments by any of their attempts' transaction hashes, recipients by their payout address or (with ``names``)
    display name."""
    if "payment" in kinds:
        for _key, attempt in view.records(ATTEMPT_PREFIX):
            if matches(attempt.data["transaction_hash"]):
                payment_id = attempt.data["payment_id"]
                payment = view.require_record(payment_key(payment_id), f"payment {payment_id}")
                yield _found("payment", payment_id, BY_TRANSACTION_HASH, payment.data)
    if "recipient" in kinds:
        for _key, recipient in view.records(RECIPIENT_PREFIX):
            recipient_id = recipient.data["recipient_id"]
            if matches(recipient.data["payout_address"]):
                yield _found("recipient", recipient_id, BY_PAYOUT_ADDRESS, recipient.data)
            elif names and any(matches(name) for name in display_names(view, [recipient_id]).values()):
                yield _found("recipient", recipient_id, BY_DISPLAY_NAME, recipient.data)


def _found(kind: str, record_id: str, matched: str, data: RecordData) -> FoundRecord:
    field = STATUS_FIELDS.get(kind)
    return FoundRecord(kind, record_id, matched, data[field] if field else "")


def _first_of_each(found: Iterable[FoundRecord], limit: int | None = None) -> list[FoundRecord]:
    """One row a record, the first way it matched (a payment by its ID and by its hash, say); at most ``limit``."""
    kept: dict[tuple[str, str], FoundRecord] = {}
    for record in found:
        kept.setdefault((record.kind, record.record_id), record)
        if len(kept) == limit:
            break
    return list(kept.values())
