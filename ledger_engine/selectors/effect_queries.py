"""Effect selectors: the outbox as workers and the console read it, by status and kind or one at a time.

Each takes a ``LedgerView`` (selectors/view.py); an effect is returned with
the revision a claim names, as the internal API lists it. The expected
revision a claim states is made here, so no caller builds an outbox key
(docs/adr/0058).
"""

from __future__ import annotations


from ledger_engine.keys import key
from ledger_engine.layout import INDEXES, OUTBOX
from ledger_engine.open_json import RecordData, Unvalidated
from ledger_engine.selectors.view import LedgerView


def effect(view: LedgerView, effect_id: str) -> RecordData | None:
    """The effect with its ``revision``, or None."""
    record = view.effect_record(effect_id)
    return {**record.data, "revision": record.revision} if record else None


def effects(view: LedgerView, status: str, kind: str | None = None, *, cursor: str | None = None,
            limit: int = 50) -> tuple[list[RecordData], str | None]:
    """Effects in ``status`` (of ``kind``) in (kind, effect ID) order after ``cursor`` ("<kind>/<effect ID>").

    Returns the page and the cursor of its last effect when more follow.
    """
    status_prefix = key("effect_by_status", status) + "/"
    prefix = key("effect_by_status", status, kind) + "/" if kind else status_prefix
    start = max(prefix, f"{status_prefix}{cursor}\x00") if cursor else None
    names = []
    for raw_key, _ in view.scan(INDEXES, prefix.encode(), start.encode() if start else None):
        names.append(raw_key.decode().removeprefix(status_prefix))
        if len(names) > limit:
            break
    page = [_listed(view, name.rsplit("/", 1)[1]) for name in names[:limit]]
    return page, names[limit - 1] if len(names) > limit else None


def _listed(view: LedgerView, effect_id: str) -> RecordData:
    """An effect the status index lists, which the outbox holds at the same boundary."""
    found = effect(view, effect_id)
    assert found is not None, f"effect {effect_id} is indexed but not in the outbox"
    return found


def expected_effect_revision(effect_id: str, revision: int) -> Unvalidated:
    """What a command about ``effect_id`` (a claim, say) expects of it."""
    return {"cf": OUTBOX, "key": effect_id, "revision": revision}
