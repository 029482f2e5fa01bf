"""Accounts (admin): provision staff and domain accounts, change roles, deactivate, and for staff:
enrolment links and two-admin staff change requests.

No screen shows anyone's password, one-time password or authenticator secret.
A new staff user gets an enrolment link by email and sets their own; the admin
sees only that enrolment is pending. Staff hold a person's roles only; adapter
and worker roles go on worker accounts. Once two admins are active, finance and
admin are granted or removed, accounts reactivated and accounts holding finance
or admin deactivated only by a staff change another admin approves.
"""

from __future__ import annotations

from typing import get_args

from django import forms
from django.contrib import messages
from django.contrib.auth.models import User
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from ledger_engine.adapters.gateway import derived_command_id
from ledger_engine.domain.actors import GUARDED_ROLES, STAFF_ROLES, WORKER_ROLES, role_conflict
from ledger_engine.domain.commands.accounts import AccountKind
from ledger_engine.domain.ruleset import ROLES
from ledger_engine.envelope import IDENTIFIER_PATTERN
from ledger_engine.errors import LedgerError
from porto_console.console import actions, commands
from porto_console.console.commands import new_command_id
from porto_console.console.forms import CommandForm
from porto_console.console.handles import seal, unseal_id
from porto_console.console.listing import DateRange, Listing, Search, by, text
from porto_console.console.paging import page_number, paginate
from porto_console.console.roles import actor_id, may_submit
from porto_console.console.screens import ACCOUNTS
from porto_console.console.services import accounts as service
from porto_console.console.services import enrolment
from porto_console.console.services import staff_changes
from porto_console.console.services.users import has_enrolled, sync_from_ledger, sync_user
from porto_console.console.views.common import render_screen
from porto_console.ledger import owner, read_at_boundary

HANDLE = "account"
KINDS = get_args(AccountKind)
PERSON_KINDS = ("staff",)  # accounts that sign in to the console
ROLE_CHOICES = [(role, role) for role in sorted(ROLES)]
WORKER_ROLE_CHOICES = ("Adapter and worker roles (worker accounts only)", [(role, role) for role in sorted(WORKER_ROLES)])


def roles_by_holder(four_eyes: bool) -> list:
    """The roles a new account may be given here: once two admins are active, finance and admin are not."""
    staff = sorted(STAFF_ROLES - GUARDED_ROLES) if four_eyes else sorted(STAFF_ROLES)
    return [("Staff roles", [(role, role) for role in staff]), WORKER_ROLE_CHOICES]


STAFF_NAME = r"^[A-Za-z0-9.@+-]{1,150}$"  # a ledger identifier that is also a Django username
GUARDED_NOTE = "Finance and admin are granted through a staff change that another admin approves."
PROVISION_GUARDED_NOTE = ("Finance and admin are not offered here: provision the account, then, on its page, request "
                          "a staff change granting the role; another admin approves it.")
STAFF_ROLES_NOTE = (f"A person holds {', '.join(sorted(STAFF_ROLES))} only; adapter and worker roles go on worker "
                    "accounts.")
# Why each pair of duties the ledger keeps apart (actors.CONFLICTING_ROLES) is never one account's.
DUTIES_KEPT_APART = {
    frozenset({"admin", "finance"}): "whoever decides who may move money does not move it",
    frozenset({"signer", "observer"}): "whoever signs a payment does not also attest what the chain did with it, so "
                                       "settling a payment takes two accounts: a payment worker signs as one (dispatcher, "
                                       "signer) and records the chain's answer as another (dispatcher, observer)",
}
DUTIES_NOTE = "No account holds " + "; nor ".join(
    f"{' with '.join(sorted(pair))}: {why}" for pair, why in DUTIES_KEPT_APART.items()) + "."


def duties_error(roles) -> str | None:
    """Why ``roles`` cannot be one account's, or None."""
    conflict = role_conflict(roles)
    if conflict is None:
        return None
    return f"An account cannot hold {' and '.join(sorted(conflict))} together: {DUTIES_KEPT_APART[conflict]}."


class AccountKinds(forms.Form):
    kind = forms.ChoiceField(choices=[("", "any kind"), *((k, k) for k in KINDS)], required=False)
    status = forms.ChoiceField(choices=[("", "any status"), ("active", "active"), ("deactivated", "deactivated")],
                               required=False)
    role = forms.ChoiceField(choices=[("", "any role"), *ROLE_CHOICES], required=False)


ACCOUNT_LISTING = Listing(
    searches=(Search("account", "Account ID", text("account_id")),),
    dated=DateRange("updated", "Updated from", lambda account: account.data.get("updated_at_ms")),
    sorts={"account": by("account_id"), "kind": lambda account: account.data["kind"],
           "status": lambda account: account.data["status"],
           "updated": lambda account: account.data.get("updated_at_ms") or 0},
    default_sort="account", identity=by("account_id"), descending_first=frozenset({"updated"}))
AccountFilter = ACCOUNT_LISTING.form_class(AccountKinds)


class ProvisionForm(CommandForm):
    kind = forms.ChoiceField(choices=[(k, k) for k in KINDS])
    account_id = forms.RegexField(regex=f"^{IDENTIFIER_PATTERN}$", label="Account ID",
                                  help_text="Staff: their sign-in name. Others: keep the generated opaque ID.")
    identity = forms.CharField(max_length=200, label="Identity evidence",
                               help_text="Staff: work email, where their enrolment link goes. Others: the verified "
                                         "provider subject. The ledger keeps only its digest.")
    roles = forms.MultipleChoiceField(choices=(), required=False, widget=forms.CheckboxSelectMultiple,
                                      help_text=f"{STAFF_ROLES_NOTE} {DUTIES_NOTE}")
    payout_address = forms.RegexField(regex=r"^0x[0-9a-f]{64}$", required=False,
                                      help_text="Artists and operators only: 0x and 64 hex digits.")

    def __init__(self, *args, four_eyes: bool, **kwargs) -> None:
        kwargs.setdefault("initial", {}).setdefault("account_id", f"acct-{new_command_id()}")
        super().__init__(*args, **kwargs)
        self.four_eyes = four_eyes
        self.fields["roles"].choices = roles_by_holder(four_eyes)
        if four_eyes:
            self.fields["roles"].help_text = f"{STAFF_ROLES_NOTE} {PROVISION_GUARDED_NOTE} {DUTIES_NOTE}"

    def clean(self):
        data = super().clean()
        if data.get("kind") in PERSON_KINDS:
            if not forms.RegexField(regex=STAFF_NAME).clean(data.get("account_id", "")):
                self.add_error("account_id", "A staff account ID is a sign-in name: letters, digits and . @ + -")
            try:
                forms.EmailField().clean(data.get("identity", ""))
            except forms.ValidationError:
                self.add_error("identity", "A staff member's identity is their work email: the link goes there.")
        kind = data.get("kind", "")
        held_elsewhere = sorted(set(data.get("roles", [])) - set(service.roles_for(kind)))
        if held_elsewhere:
            self.add_error("roles", f"A {kind} account cannot hold {', '.join(held_elsewhere)}."
                                    + (f" {STAFF_ROLES_NOTE}" if kind in PERSON_KINDS else ""))
        elif self.four_eyes and service.guarded(data.get("roles", [])):
            self.add_error("roles", GUARDED_NOTE)
        elif duties_error(data.get("roles", [])):
            self.add_error("roles", duties_error(data["roles"]))
        return data


class ChangeForm(CommandForm):
    """The roles the account's kind may hold (less finance and admin once two admins are active) and its status."""

    revision = forms.IntegerField(min_value=1, widget=forms.HiddenInput)  # the revision the admin saw
    roles = forms.MultipleChoiceField(choices=(), required=False, widget=forms.CheckboxSelectMultiple)
    active = forms.BooleanField(required=False, help_text="Untick to deactivate the account.")

    def __init__(self, *args, kind: str, four_eyes: bool, guarded: list[str], **kwargs) -> None:
        """``guarded``: the guarded roles of an active account whose deactivation needs a second admin."""
        super().__init__(*args, **kwargs)
        offered = [role for role in service.roles_for(kind) if not (four_eyes and role in GUARDED_ROLES)]
        self.fields["roles"].choices = [(role, role) for role in offered]
        if kind == "staff":
            self.fields["roles"].help_text = STAFF_ROLES_NOTE
        elif kind == "worker":
            self.fields["roles"].help_text = DUTIES_NOTE
        if four_eyes:
            self.fields["roles"].help_text = (f"{self.fields['roles'].help_text} {GUARDED_NOTE} Reactivating, and "
                                              "deactivating an account holding either, take one too.").strip()
        self.guarded = guarded

    def clean(self):
        data = super().clean()
        if self.guarded and not data.get("active"):
            self.add_error("active", f"Deactivating an account holding {' or '.join(self.guarded)} is a staff "
                                     "change that another admin approves: request it below.")
        if duties_error(data.get("roles", [])):
            self.add_error("roles", duties_error(data["roles"]))
        return data


class StaffRequestForm(CommandForm):
    """Only the changes that would change something for the account as the ledger holds it now."""

    change = forms.ChoiceField(choices=(), label="Request")

    def __init__(self, *args, account: service.Account, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["change"].choices = staff_changes.requests_for(account.roles, account.active)


def account_list(request):
    filter_form = AccountFilter(request.GET or None)
    query, filters = filter_form.query(), filter_form.filters()
    read = read_at_boundary(lambda ledger: paginate(ACCOUNT_LISTING.apply(service.accounts(ledger, **filters), query),
                                                    page_number(request)))
    rows = [(account, seal(HANDLE, account.account_id)) for account in read.data.items]
    return render_screen(request, "console/accounts.html", ACCOUNTS.title, read, page=read.data, rows=rows,
                         query=query, filter_form=filter_form,
                         may_provision=may_submit(request.user, "RegisterAccount"))


def account_new(request):
    read = read_at_boundary(service.four_eyes)
    form = ProvisionForm(request.POST or None, four_eyes=read.data)
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
            if outcome.accepted:
                if data["kind"] in PERSON_KINDS:
                    _new_staff_user(request, data)
                return redirect(account_url(data["account_id"]))
            retry = {name: value for name, value in data.items() if name != "command_id"}
            form = ProvisionForm(initial=retry, four_eyes=read.data)  # that command ID is spent
    return render_screen(request, "console/account_new.html", "Provision an account", read, form=form,
                         four_eyes=read.data)


def _new_staff_user(request, data: dict) -> None:
    """The console user for a new staff account, and the first enrolment link (recorded by the ledger first).

    The user gets the roles and status the ledger holds now, not the form's: a provisioning form
    answered again after the account changed must not bring back what the change took away.
    """
    account = service.account(owner(), data["account_id"])
    assert account is not None, data["account_id"]  # registered by the accepted command this follows
    user, _ = sync_user(account.account_id, roles=account.roles, active=account.active,
                        email=data["identity"].strip().lower())
    if has_enrolled(user) or not account.active:
        return
    _send_link(request, user, derived_command_id("first-enrolment-link", data["command_id"]))


def _send_link(request, user: User, command_id: str) -> None:
    ledger = owner()
    try:
        enrolment.require_not_enrolled(ledger, user)
        enrolment.require_deliverable(ledger, user)
        # The link's ID is the sender's own, as the command's is: another admin's form ID names another link.
        link_id = enrolment.link_id_for(commands.journalled_id(actor_id(request.user), command_id))
        outcome = commands.submit(actor_id(request.user), command_id, enrolment.link_request(user.username, link_id))
    except enrolment.EnrolmentRefused as error:
        messages.error(request, str(error))
        return
    except LedgerError as error:
        messages.error(request, actions.refusal(error))
        return
    if not outcome.accepted:
        actions.report(request, outcome, "")
        return
    try:
        link = enrolment.create_link(ledger, user, link_id, issued_by=actor_id(request.user))
    except enrolment.EnrolmentRefused as error:  # another admin's link was recorded after this one
        messages.info(request, str(error))
        return
    messages.success(request, f"An enrolment link went to {user.username}'s work email; it expires at "
                              f"{link.expires_at:%Y-%m-%d %H:%M} UTC. Enrolment is pending until they use it.")


def account_detail(request, handle: str):
    account_id = unseal_id(HANDLE, handle)
    read = read_at_boundary(lambda ledger: _detail(ledger, account_id))
    account = read.data["account"]
    if account is None:
        raise Http404("no such account")
    four_eyes = read.data["four_eyes"]
    user = User.objects.filter(username=account_id).first() if account.data["kind"] in PERSON_KINDS else None
    guarded = service.guarded(account.roles) if four_eyes and account.active else []
    form = ChangeForm(request.POST or None, kind=account.data["kind"], four_eyes=four_eyes, guarded=guarded,
                      initial={"roles": account.roles, "active": account.active, "revision": account.revision})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        roles = sorted(set(data["roles"]) | set(service.guarded(account.roles) if four_eyes else ()))
        try:
            outcome = actions.run(request, data["command_id"], "RegisterAccount", lambda: service.change(
                account, roles=roles, active=data["active"], seen_revision=data["revision"]))
        except actions.ActionRefused as error:
            form.add_error(None, str(error))
        else:
            actions.report(request, outcome, f"Account {account_id} changed")
            if outcome.accepted:  # as the ledger holds the account now, whichever command this answer was
                sync_from_ledger(owner(), account_id)
            return redirect(account_url(account_id))
    return render_screen(request, "console/account_detail.html", f"Account {account_id}", read, form=form,
                         **read.data, handle=handle, own_account=account_id == actor_id(request.user),
                         may_change=may_submit(request.user, "RegisterAccount"), console_user=user,
                         enrolment=enrolment.status(owner(), user) if user else None,
                         request_form=StaffRequestForm(account=account), link_form=CommandForm())


def _detail(ledger, account_id: str) -> dict:
    """What the ledger says of the account, read at one boundary (Django's side is read apart from it)."""
    return {"account": service.account(ledger, account_id), "recipient": service.recipient(ledger, account_id),
            "actor_roles": service.actor_roles(ledger, account_id), "four_eyes": service.four_eyes(ledger),
            "staff_changes": [{**change, "handle": seal("staff-change", change["change_id"]),
                               "description": staff_changes.describe(change)}
                              for change in staff_changes.changes(ledger, account_id=account_id)]}


@require_POST
def request_change(request, handle: str):
    account_id = unseal_id(HANDLE, handle)
    account = read_at_boundary(lambda ledger: service.account(ledger, account_id)).data
    if account is None:
        raise Http404("no such account")
    actions.run_form(request, StaffRequestForm(request.POST, account=account), "RequestStaffChange",
                     lambda data: staff_changes.request(data["command_id"], account_id, data["change"]),
                     done="Staff change requested; another admin must approve it", invalid="Choose a change.")
    return redirect(account_url(account_id))


@require_POST
def send_link(request, handle: str):
    """Send a first enrolment link again (a lost email); replacing enrolled credentials is a reset instead."""
    account_id = unseal_id(HANDLE, handle)
    form = CommandForm(request.POST)
    user = User.objects.filter(username=account_id).first()
    if not form.is_valid() or user is None:
        raise Http404("no console user for that account")
    _send_link(request, user, form.cleaned_data["command_id"])
    return redirect(account_url(account_id))


def account_url(account_id: str) -> str:
    return reverse("admin:console-account", args=[seal(HANDLE, account_id)])
