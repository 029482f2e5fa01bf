"""Accounts (admin): provision staff and domain accounts with roles, change roles, deactivate."""

from __future__ import annotations

from typing import get_args

from django import forms
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse

from ledger_engine.domain.commands.accounts import AccountKind
from ledger_engine.domain.ruleset import ROLES
from ledger_engine.keys import IDENTIFIER_PATTERN
from porto_console.console import actions
from porto_console.console.commands import new_command_id
from porto_console.console.forms import CommandForm
from porto_console.console.handles import seal, unseal
from porto_console.console.paging import page_number, paginate
from porto_console.console.roles import actor_id, may_submit
from porto_console.console.screens import ACCOUNTS
from porto_console.console.services import accounts as service
from porto_console.console.services.users import issue_credentials, sync_user
from porto_console.console.views.common import filter_values, render_screen
from porto_console.ledger import read_at_boundary

HANDLE = "account"
KINDS = get_args(AccountKind)
PERSON_KINDS = ("staff",)  # accounts that sign in to the console
ROLE_CHOICES = [(role, role) for role in sorted(ROLES)]
STAFF_NAME = r"^[A-Za-z0-9.@+-]{1,150}$"  # a ledger identifier that is also a Django username


class AccountFilter(forms.Form):
    kind = forms.ChoiceField(choices=[("", "any kind"), *((k, k) for k in KINDS)], required=False)
    status = forms.ChoiceField(choices=[("", "any status"), ("active", "active"), ("deactivated", "deactivated")],
                               required=False)
    role = forms.ChoiceField(choices=[("", "any role"), *ROLE_CHOICES], required=False)


class ProvisionForm(CommandForm):
    kind = forms.ChoiceField(choices=[(k, k) for k in KINDS])
    account_id = forms.RegexField(regex=f"^{IDENTIFIER_PATTERN}$", label="Account ID",
                                  help_text="Staff: their sign-in name. Others: keep the generated opaque ID.")
    identity = forms.CharField(max_length=200, label="Identity evidence",
                               help_text="Staff: work email. Others: the verified provider subject. "
                                         "The ledger keeps only its digest.")
    roles = forms.MultipleChoiceField(choices=ROLE_CHOICES, required=False, widget=forms.CheckboxSelectMultiple)
    payout_address = forms.RegexField(regex=r"^0x[0-9a-f]{64}$", required=False,
                                      help_text="Artists and operators only: 0x and 64 hex digits.")

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("initial", {}).setdefault("account_id", f"acct-{new_command_id()}")
        super().__init__(*args, **kwargs)

    def clean(self):
        data = super().clean()
        if data.get("kind") in PERSON_KINDS and not forms.RegexField(regex=STAFF_NAME).clean(data.get("account_id", "")):
            self.add_error("account_id", "A staff account ID is a sign-in name: letters, digits and . @ + -")
        return data


class ChangeForm(CommandForm):
    revision = forms.IntegerField(min_value=1, widget=forms.HiddenInput)  # the revision the admin saw
    roles = forms.MultipleChoiceField(choices=ROLE_CHOICES, required=False, widget=forms.CheckboxSelectMultiple)
    active = forms.BooleanField(required=False, help_text="Untick to deactivate the account.")


def account_list(request):
    filters = filter_values(AccountFilter(request.GET or None))
    read = read_at_boundary(lambda ledger: paginate(service.accounts(ledger, **filters), page_number(request)))
    rows = [(account, seal(HANDLE, account.account_id)) for account in read.data.items]
    return render_screen(request, "console/accounts.html", ACCOUNTS.title, read, page=read.data, rows=rows,
                         filter_form=AccountFilter(request.GET or None),
                         may_provision=may_submit(request.user, "RegisterAccount"))


def account_new(request):
    form = ProvisionForm(request.POST or None)
    credentials = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            outcome = actions.run(request, data["command_id"], "RegisterAccount", lambda: service.provision(
                account_id=data["account_id"], kind=data["kind"], identity=data["identity"], roles=data["roles"],
                payout_address=data["payout_address"]))
        except actions.ActionRefused as error:
            form.add_error(None, str(error))
        else:
            actions.report(request, outcome, f"Account {data['account_id']} provisioned")
            if not outcome.accepted:  # that command ID is spent: offer the same inputs under a new one
                retry = {name: value for name, value in data.items() if name != "command_id"}
                form = ProvisionForm(initial=retry)
            elif data["kind"] in PERSON_KINDS:
                user, created = sync_user(data["account_id"], roles=data["roles"], active=True,
                                          email=data["identity"] if "@" in data["identity"] else "")
                credentials = issue_credentials(user) if created else None
            if outcome.accepted and credentials is None:
                return redirect(account_url(data["account_id"]))
    read = read_at_boundary(lambda ledger: None)
    return render_screen(request, "console/account_new.html", "Provision an account", read, form=form,
                         credentials=credentials)


def account_detail(request, handle: str):
    account_id = unseal(HANDLE, handle)
    read = read_at_boundary(lambda ledger: _detail(ledger, account_id))
    account = read.data["account"]
    if account is None:
        raise Http404("no such account")
    form = ChangeForm(request.POST or None,
                      initial={"roles": account.roles, "active": account.active, "revision": account.revision})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            outcome = actions.run(request, data["command_id"], "RegisterAccount", lambda: service.change(
                account, roles=data["roles"], active=data["active"], seen_revision=data["revision"]))
        except actions.ActionRefused as error:
            form.add_error(None, str(error))
        else:
            actions.report(request, outcome, f"Account {account_id} changed")
            if outcome.accepted and account.data["kind"] in PERSON_KINDS:
                sync_user(account_id, roles=data["roles"], active=data["active"])
            return redirect(account_url(account_id))
    return render_screen(request, "console/account_detail.html", f"Account {account_id}", read, form=form,
                         **read.data, own_account=account_id == actor_id(request.user),
                         may_change=may_submit(request.user, "RegisterAccount"))


def _detail(ledger, account_id: str) -> dict:
    return {"account": service.account(ledger, account_id), "recipient": service.recipient(ledger, account_id),
            "actor_roles": service.actor_roles(ledger, account_id)}


def account_url(account_id: str) -> str:
    return reverse("admin:console-account", args=[seal(HANDLE, account_id)])
