"""Pausing and resuming the announcement of effects to the workers (admin).

After ``porto-ledger restore`` dispatch is disabled; an admin resumes it once
``python -m porto_console.effects.reconcile`` has exited 0 (docs/effects.md),
and may pause it again, for instance before a restore. The switch is the
owner's, outside the journal, so the reason is stored with who gave it and
logged.
"""

from __future__ import annotations

import logging

from django import forms
from django.contrib import messages
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from porto_console.console.forms import ReasonField
from porto_console.console.roles import ADMIN, actor_id
from porto_console.console.screens import DASHBOARD
from porto_console.ledger import owner

log = logging.getLogger("porto.console.dispatch")

DISPATCH_ROLES = frozenset({ADMIN})


class DispatchForm(forms.Form):
    """Switch dispatch to ``enabled``; the form offers the opposite of the current state."""

    enabled = forms.TypedChoiceField(choices=[("1", "resume"), ("0", "pause")], coerce=lambda value: value == "1",
                                     widget=forms.HiddenInput)
    reason = ReasonField(label="Reason")

    @classmethod
    def to_switch(cls, state: dict) -> DispatchForm:
        return cls(initial={"enabled": "0" if state["enabled"] else "1"})


@require_POST
def switch(request):
    form = DispatchForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give a reason for pausing or resuming dispatch.")
        return redirect(f"admin:{DASHBOARD.url_name}")
    enabled, reason = form.cleaned_data["enabled"], form.cleaned_data["reason"]
    owner().set_dispatch(enabled, f"{actor_id(request.user)}: {reason}")
    log.warning("dispatch %s by %s: %s", "resumed" if enabled else "paused", actor_id(request.user), reason)
    messages.success(request, f"Dispatch {'resumed' if enabled else 'paused'}.")
    return redirect(f"admin:{DASHBOARD.url_name}")
