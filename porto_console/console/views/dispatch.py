"""Pausing and resuming the carrying out of effects (payments, anchors), as journalled ledger commands.

Pausing is the safe direction: one admin or ops member pauses with a reason and
a current authenticator code (``PauseDispatch``). Resuming takes two people:
one asks with a reason (``RequestDispatchResume``), another admin approves
with their code or declines (``DecideDispatchResume``). The ledger enforces
each rule; a ledger restored from a backup refuses a resume until it has been
reconciled and promoted (``porto-ledger promote``, docs/runbook.md).
"""

from __future__ import annotations

from typing import get_args

from django import forms
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from ledger_engine.domain.commands.dispatch_switch import DeclineReason
from ledger_engine.envelope import IDENTIFIER_PATTERN
from porto_console.console import actions
from porto_console.console.commands import CommandRequest
from porto_console.console.forms import CommandForm, ReasonField, StepUpForm
from porto_console.console.roles import actor_id, may_submit
from porto_console.console.screens import DASHBOARD

class PauseForm(StepUpForm):
    reason = ReasonField(label="Reason")


class ResumeRequestForm(CommandForm):
    reason = ReasonField(label="Reason")


class ApproveForm(StepUpForm):
    """Names the request the user was shown, so no other one is approved in its place."""

    resume_id = forms.RegexField(regex=IDENTIFIER_PATTERN, widget=forms.HiddenInput)


class DeclineForm(CommandForm):
    resume_id = forms.RegexField(regex=IDENTIFIER_PATTERN, widget=forms.HiddenInput)
    reason = forms.ChoiceField(choices=[(r, r.replace("_", " ")) for r in get_args(DeclineReason)])


def resume_id_for(command_id: str) -> str:
    return f"resume-{command_id}"


def forms_for(request, state: dict) -> dict:
    """The forms this user is offered on the Dispatch card, given the switch as the ledger holds it."""
    offered = {}
    waiting = state["resume_request"]
    if state["switch"] is None or state["switch"]["status"] == "running":
        if may_submit(request.user, "PauseDispatch"):
            offered["pause_form"] = PauseForm()
    elif state["reconciliation_owed"] is None and waiting is None:
        if may_submit(request.user, "RequestDispatchResume"):
            offered["resume_form"] = ResumeRequestForm()
    elif waiting is not None and may_submit(request.user, "DecideDispatchResume"):
        named = {"resume_id": waiting["resume_id"]}
        if waiting["requested_by"] != actor_id(request.user):
            offered["approve_form"] = ApproveForm(initial=named)
        offered["decline_form"] = DeclineForm(initial=named)
    return offered


@require_POST
def pause(request):
    actions.run_form(request, PauseForm(request.POST), "PauseDispatch",
                     lambda data: CommandRequest("PauseDispatch", {"reason": data["reason"]}),
                     done="Dispatch paused", invalid="Give a reason and the 6-digit code from your authenticator.")
    return _dashboard()


@require_POST
def request_resume(request):
    actions.run_form(request, ResumeRequestForm(request.POST), "RequestDispatchResume",
                     lambda data: CommandRequest("RequestDispatchResume", {
                         "resume_id": resume_id_for(data["command_id"]), "reason": data["reason"]}),
                     done="Resume requested: another admin approves it", invalid="Give a reason for resuming.")
    return _dashboard()


@require_POST
def approve_resume(request):
    actions.run_form(request, ApproveForm(request.POST), "DecideDispatchResume",
                     lambda data: _decision(data["resume_id"], "approve"), done="Dispatch resumed",
                     invalid="Enter the 6-digit code from your authenticator.")
    return _dashboard()


@require_POST
def decline_resume(request):
    actions.run_form(request, DeclineForm(request.POST), "DecideDispatchResume",
                     lambda data: _decision(data["resume_id"], "decline", data["reason"]), done="Resume declined",
                     invalid="Choose a reason for declining.")
    return _dashboard()


def _decision(resume_id: str, decision: str, reason: str | None = None) -> CommandRequest:
    payload = {"resume_id": resume_id, "decision": decision}
    if reason is not None:
        payload["reason"] = reason
    return CommandRequest("DecideDispatchResume", payload)


def _dashboard():
    return redirect(f"admin:{DASHBOARD.url_name}")
