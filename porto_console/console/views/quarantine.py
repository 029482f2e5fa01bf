"""Effect quarantine (ops): effects whose work failed permanently, with the cause, the ledger's view, and retries.

Only permanent failures are parked here; the workers retry transient ones
themselves. A retry, of one effect, the ticked ones or all of them at once,
only releases them: the next sweep sends each one if the ledger still has
it pending or its claim has lapsed, and ``ClaimEffect`` decides who works it.
"""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from ledger_engine.open_json import Report
from ledger_engine.selectors import effect_queries
from ledger_engine.selectors.view import LedgerView
from porto_console.console.handles import unseal_id
from porto_console.console.listing import DateRange, Listing, Search, by, text
from porto_console.console.paging import page_number, paginate
from porto_console.console.roles import has_role
from porto_console.console.screens import QUARANTINE, QUARANTINE_RETRY_ROLES
from porto_console.console.views.common import render_screen
from porto_console.console.services.quarantine import quarantine
from porto_console.effects import delivery
from porto_console.ledger import read_view

HANDLE = "effect"
QUARANTINE_LISTING = Listing(
    searches=(Search("effect", "Effect ID", text("effect_id")), Search("kind", "Kind", text("kind")),
              Search("cause", "Cause or reason", lambda entry: (str(entry.get("cause") or ""),
                                                                str(entry.get("reason") or "")))),
    dated=DateRange("quarantined", "Quarantined from", lambda entry: entry.get("quarantined_at_ms")),
    sorts={"quarantined": by("quarantined_at_ms"), "kind": by("kind", ""), "retries": by("retries")},
    default_sort="quarantined", identity=by("effect_id", ""), descending_first=frozenset({"retries"}))
QuarantineFilter = QUARANTINE_LISTING.form_class()


def quarantine_list(request):
    """Every parked effect is read, so "retry all" counts them all whatever the search shows."""
    filter_form = QuarantineFilter(request.GET or None)
    query = filter_form.query()
    read = read_view(_entries_with_ledger_status)
    page = paginate(QUARANTINE_LISTING.apply(read.data, query), page_number(request))
    return render_screen(request, "console/quarantine.html", QUARANTINE.title, read, entries=page.items, page=page,
                         parked=len(read.data), query=query, filter_form=filter_form,
                         retryable=sum(entry["effect_id"] is not None for entry in read.data),
                         may_retry=has_role(request.user, QUARANTINE_RETRY_ROLES))


@require_POST
def retry(request, handle: str):
    effect_id = unseal_id(HANDLE, handle)
    if delivery.retry_quarantined(quarantine(), effect_id):
        messages.success(request, f"Effect {effect_id} released: the next sweep sends it if it is still claimable.")
    else:
        messages.error(request, f"Effect {effect_id} is not in quarantine (already released?).")
    return redirect(f"admin:{QUARANTINE.url_name}")


@require_POST
def retry_many(request):
    """Release the ticked effects, or every quarantined one when ``all`` is sent."""
    chosen = None if request.POST.get("all") else [unseal_id(HANDLE, handle) for handle in request.POST.getlist("effect")]
    if chosen == []:
        messages.error(request, "Tick the effects to retry, or retry all.")
        return redirect(f"admin:{QUARANTINE.url_name}")
    released = delivery.retry_all_quarantined(quarantine(), chosen)
    messages.success(request, f"{len(released)} effect(s) released: the next sweep sends each one that is "
                              "still claimable.")
    return redirect(f"admin:{QUARANTINE.url_name}")


def _entries_with_ledger_status(view: LedgerView) -> list[Report]:
    def status(effect_id: str | None) -> str:
        if effect_id is None:
            return "unknown: the entry names no effect"
        found = effect_queries.effect(view, effect_id)
        return found["status"] if found else "not in this ledger"

    return [{**entry, "ledger_status": status(entry["effect_id"])} for entry in delivery.quarantined(quarantine())]
