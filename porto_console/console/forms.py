"""Form pieces every action shares: the command ID chosen at render, the step-up code."""

from __future__ import annotations

from django import forms

from ledger_engine.envelope import UUID_PATTERN
from porto_console.console.commands import new_command_id


class CommandForm(forms.Form):
    """A form that becomes exactly one ledger command; its ID is fixed when the form is rendered."""

    command_id = forms.RegexField(regex=f"^{UUID_PATTERN}$", widget=forms.HiddenInput)

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("initial", {}).setdefault("command_id", new_command_id())
        super().__init__(*args, **kwargs)


class StepUpForm(CommandForm):
    """A money action: it also needs a current code from the user's authenticator."""

    otp_token = forms.RegexField(regex=r"^[0-9]{6}$", label="Authenticator code", max_length=6,
                                 widget=forms.TextInput(attrs={"autocomplete": "one-time-code",
                                                               "inputmode": "numeric"}))


class ReasonField(forms.CharField):
    def __init__(self, **kwargs) -> None:
        super().__init__(max_length=200, widget=forms.TextInput(attrs={"size": 60}), **kwargs)


def accept_posted_choices(form: forms.Form, name: str) -> None:
    """Let a bound form accept the values posted for ``name``: what the list showed may have changed since,
    and the action itself checks each value against the ledger."""
    if form.is_bound:
        form.fields[name].choices = [(value, value) for value in form.data.getlist(name)]
