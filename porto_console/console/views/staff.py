"""Staff changes (admin decides, auditor reads) and sign-in lockouts (admin): two admins, and a record of each.

A staff change is requested on an account's page by one admin and decided
here by another, whose approval needs a fresh authenticator code (a step-up
proof the ledger checks). Only then does the console carry it out in Django.
A lockout is cleared only after the ledger recorded who cleared it.
"""

from __future__ import annotations

from typing import get_args

from axes.models import AccessAttempt
from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.models import User
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from ledger_engine.domain.commands.staff_changes import DeclineReason
from ledger_engine.domain.schema.staff import StaffChange
from ledger_engine.errors import LedgerError
from ledger_engine.selectors import staff_queries
from porto_console.console import actions
from porto_console.console.forms import CommandForm, StepUpForm
from porto_console.console.handles import seal, unseal_id
from porto_console.console.listing import REQUESTED, DateRange, Listing, Search, by, text
from porto_console.console.paging import page_number, paginate
from porto_console.console.roles import actor_id, may_submit
from porto_console.console.screens import LOCKOUTS, STAFF_CHANGES
from porto_console.console.services import enrolment, lockouts
from porto_console.console.services import staff_changes as service
from porto_console.console.views.common import render_screen
from porto_console.ledger import read_view

HANDLE = "staff-change"


class ChangeStatuses(forms.Form):
    status = forms.ChoiceField(choices=[(s, s) for s in service.STATUSES], required=False)


CHANGE_LISTING = Listing(
    searches=(Search("account", "Account", text("target")), Search("requested_by", "Requested by", text("requested_by")),
              Search("change", "Change ID", text("change_id"))),
    dated=REQUESTED,
    sorts={"requested": by("requested_at_ms"), "status": by("status"), "account": by("target")},
    default_sort="requested", identity=by("change_id"), descending_first=frozenset({"requested"}))
ChangeFilter = CHANGE_LISTING.form_class(ChangeStatuses)


class DeclineForm(CommandForm):
    reason = forms.ChoiceField(choices=[(r, r.replace("_", " ")) for r in get_args(DeclineReason)])


def change_list(request):
    filter_form = ChangeFilter(request.GET or None, initial={"status": "pending"})
    query, status = filter_form.query(), filter_form.choice("status", "pending")
    read = read_view(lambda view: paginate(CHANGE_LISTING.apply(staff_queries.changes(view, status), query),
                                           page_number(request)))
    rows = [(change, seal(HANDLE, change["change_id"]), service.describe(change)) for change in read.data.items]
    return render_screen(request, "console/staff_changes.html", STAFF_CHANGES.title, read, page=read.data, rows=rows,
                         status=status, query=query, filter_form=filter_form)


def change_detail(request, handle: str):
    change_id = unseal_id(HANDLE, handle)
    read = read_view(lambda view: staff_queries.change(view, change_id))
    change = read.data
    if change is None:
        raise Http404("no such staff change")
    target = change["target"]
    user = User.objects.filter(username=target).first()
    return render_screen(request, "console/staff_change.html", f"Staff change {change_id}", read, change=change,
                         handle=handle, description=service.describe(change), target_user=user,
                         blockers=_blockers(request, change), approve_form=StepUpForm(), decline_form=DeclineForm())


def _blockers(request, change: StaffChange) -> list[str]:
    blockers = []
    if not may_submit(request.user, "DecideStaffChange"):
        blockers.append("Deciding a staff change needs the admin role.")
    if change["status"] != "pending":
        blockers.append(f"The change is {change['status']}.")
    if change["requested_by"] == actor_id(request.user):
        blockers.append("You requested this change: another admin must decide it (four eyes).")
    if change["target"] == actor_id(request.user):
        blockers.append("This change is to your own account: another admin must decide it.")
    return blockers


@require_POST
def approve(request, handle: str):
    change_id = unseal_id(HANDLE, handle)
    outcome = actions.run_form(request, StepUpForm(request.POST), "DecideStaffChange",
                               lambda data: service.decide(change_id, "approve"), done="Staff change approved",
                               invalid="Enter the 6-digit code from your authenticator.")
    if outcome is not None and outcome.accepted:
        _carry_out(request)
    return redirect(change_url(change_id))


def _carry_out(request) -> None:
    """The Django side of every approved change (this one, and any a crash left unfinished)."""
    try:
        service.apply_approved()
    except (enrolment.EnrolmentRefused, LedgerError) as error:
        messages.error(request, f"Approved in the ledger, but not yet carried out here: {error}")


@require_POST
def decline(request, handle: str):
    change_id = unseal_id(HANDLE, handle)
    actions.run_form(request, DeclineForm(request.POST), "DecideStaffChange",
                     lambda data: service.decide(change_id, "decline", data["reason"]), done="Staff change declined",
                     invalid="Choose a reason for declining.")
    return redirect(change_url(change_id))


def change_url(change_id: str) -> str:
    return reverse("admin:console-staff-change", args=[seal(HANDLE, change_id)])


# Sign-in lockouts.

LOCKOUT_LISTING = Listing(
    searches=(Search("username", "Username", text("username")), Search("address", "Address", text("ip_address"))),
    dated=DateRange("attempted", "Last attempt from", lockouts.attempted_at_ms),
    sorts={"attempted": lockouts.attempted_at_ms, "username": by("username", ""),
           "failures": by("failures_since_start")},
    default_sort="attempted", identity=lambda attempt: str(attempt.pk),
    descending_first=frozenset({"attempted", "failures"}))
LockoutFilter = LOCKOUT_LISTING.form_class()


def lockout_list(request):
    filter_form = LockoutFilter(request.GET or None)
    query = filter_form.query()
    read = read_view(lambda view: None)  # the head the lockouts are shown at
    attempts = paginate(LOCKOUT_LISTING.apply(lockouts.locked(), query), page_number(request))
    # A form (a command ID) of its own on each row: clearing one lockout leaves the others' forms unspent.
    rows = [(attempt, seal(lockouts.HANDLE, str(attempt.pk)), CommandForm()) for attempt in attempts.items]
    return render_screen(request, "console/lockouts.html", LOCKOUTS.title, read, page=attempts, rows=rows,
                         query=query, filter_form=filter_form, failure_limit=settings.AXES_FAILURE_LIMIT)


@require_POST
def lockout_clear(request, handle: str):
    attempt = AccessAttempt.objects.filter(pk=int(unseal_id(lockouts.HANDLE, handle))).first()
    if attempt is None:
        messages.info(request, "That lockout has already been cleared (or has expired).")
        return redirect(f"admin:{LOCKOUTS.url_name}")
    outcome = actions.run_form(request, CommandForm(request.POST), "RecordLockoutCleared",
                               lambda data: lockouts.clearance(data["command_id"], attempt),
                               done=f"Lockout of {attempt.username} cleared", invalid="Reload the page and try again.")
    accepted = outcome is not None and outcome.accepted
    if outcome is not None and accepted and outcome.duplicate:  # it names a lockout cleared before, not this one
        messages.warning(request, f"This form's clearance was recorded before; the lockout of {attempt.username} "
                                  "still listed is not cleared by it. Clear it from the list to record that.")
    elif accepted:
        lockouts.clear(attempt)
    return redirect(f"admin:{LOCKOUTS.url_name}")
