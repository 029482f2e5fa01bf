"""The console's search: what someone pastes, turned into the records their roles open.

Only the kinds of record the user's screens open are searched, so a record they could not open is never read for
them and the answer says nothing of whether it exists. A whole ID, transaction hash, payout address or recipient's
display name is an exact match; only when nothing matches exactly is the term looked for inside them.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from ledger_engine.selectors import search_queries
from ledger_engine.selectors.search_queries import BY_DISPLAY_NAME, FoundRecord
from ledger_engine.selectors.view import LedgerView
from porto_console.console.screens import CORRECTIONS, HOLDS, PAYMENTS, PAYOUTS, RECIPIENTS

# Each kind of record and the screen whose roles open it, in the order results are listed.
KIND_SCREENS = {"run": PAYOUTS, "payment": PAYMENTS, "recipient": RECIPIENTS, "hold": HOLDS, "correction": CORRECTIONS}
KIND_NAMES = {"run": "payout run", "payment": "payment", "recipient": "recipient", "hold": "hold",
              "correction": "correction"}
MIN_FRAGMENT = 4  # shorter, and a fragment matches too much to be worth listing
MOST_LISTED = 50
SHORTENED = "…"  # what a short ID copied from a list ends with (``short_hash``), and no ID holds


@dataclass(frozen=True)
class Found:
    records: list[FoundRecord]
    exact: bool  # the term is a whole ID, hash, address or name; otherwise a fragment of them
    more: bool = False  # the term matched more than MOST_LISTED records
    too_short: bool = False  # nothing matched exactly, and the term is too short to look for as a fragment

    @property
    def single(self) -> FoundRecord | None:
        """The one record an exact term names, which the search opens at once."""
        return self.records[0] if self.exact and len(self.records) == 1 else None


def searchable_kinds(roles: frozenset[str]) -> tuple[str, ...]:
    return tuple(kind for kind, screen in KIND_SCREENS.items() if roles & screen.roles)


def cleaned(term: str) -> str:
    """The term as the ledger stores text (NFC: a display name typed decomposed still matches)."""
    return unicodedata.normalize("NFC", term).strip()


def without_ellipsis(term: str) -> str:
    return term.removesuffix(SHORTENED).strip()


def search(view: LedgerView, term: str, roles: frozenset[str]) -> Found:
    """The records of the kinds ``roles`` open that ``term`` names whole, or else holds as a fragment.

    A term ending with the ellipsis was copied from a list, so it is part of an ID and never a name. A whole
    display name opens its recipient only when no ID the user can open holds the term: a name never takes a
    pasted ID away from its record."""
    kinds, copied, term = searchable_kinds(roles), term.endswith(SHORTENED), without_ellipsis(term)
    exact = search_queries.exact_matches(view, term, kinds, MOST_LISTED + 1, names=not copied)
    if not kinds or (exact and any(record.matched != BY_DISPLAY_NAME for record in exact)):
        return _listed(exact, exact=True)
    if exact:
        holding = search_queries.partial_matches(view, term, kinds, MOST_LISTED + 1, names=False)
        return _listed(exact, exact=True) if not holding else _listed([*holding, *exact], exact=False)
    if len(term) < MIN_FRAGMENT:
        return Found([], exact=False, too_short=True)
    return _listed(search_queries.partial_matches(view, term, kinds, MOST_LISTED + 1, names=not copied), exact=False)


def _listed(records: list[FoundRecord], *, exact: bool) -> Found:
    """At most MOST_LISTED of ``records``, saying whether there were more."""
    return Found(records[:MOST_LISTED], exact=exact, more=len(records) > MOST_LISTED)
