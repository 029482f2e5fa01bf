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

from functools import partial
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
from ledger_engine.domain.commands.accounts import (
    MAX_DISPLAY_NAME_CHARS, RECIPIENT_KINDS, AccountKind, valid_display_name,
)
from ledger_engine.domain.ruleset import ROLES
from ledger_engine.domain.schema.staff import StaffChange
from ledger_engine.envelope import IDENTIFIER_PATTERN
from ledger_engine.errors import LedgerError
from ledger_engine.selectors import account_queries, staff_queries
from porto_console.console import actions, commands
from porto_console.console.commands import new_command_id
from porto_console.console.forms import CommandForm
from porto_console.console.handles import seal, unseal_id
from porto_console.console.listing import DateRange, Listing, Search, by
from porto_console.console.paging import page_number, paginate
from porto_console.console.roles import actor_id, may_submit
from porto_console.console.screens import ACCOUNTS
from porto_console.console.services import accounts as service
from porto_console.console.services import enrolment
from porto_console.console.services import staff_changes
from porto_console.console.services.users import has_enrolled, sync_from_ledger, sync_user
from porto_console.console.views.common import render_screen
from porto_console.ledger import read_view

HANDLE = "account"
KINDS = get_args(AccountKind)
PERSON_KINDS = ("staff",)  # accounts that sign in to the console
ROLE_CHOICES = [(role, role) for role in sorted(ROLES)]
WORKER_ROLE_CHOICES = ("Adapter and worker roles (worker accounts only)", [(role, role) for role in sorted(WORKER_ROLES)])


def roles_by_holder() -> list:
    """The roles a new account may be given here, by who may hold them."""
    return [("Staff roles", [(role, role) for role in sorted(STAFF_ROLES)]), WORKER_ROLE_CHOICES]


STAFF_NAME = r"^[A-Za-z0-9.@+-]{1,150}$"  # a ledger identifier that is also a Django username
GUARDED_NOTE = "Finance and admin are granted through a staff change that another admin approves."
PROVISION_GUARDED_NOTE = ("Ticking finance or admin provisions the account without it and requests a staff change "
                          "granting it, which another admin approves under Staff changes.")
DISPLAY_NAME_HELP = ("Artists and operators: the public name they are paid and shown under (a stage or trading "
                     "name), never a legal name; it is kept in the ledger's history. Leave it empty to show the "
                     "account by its ID.")
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
    searches=(Search("account", "Account ID or display name",
                     lambda account: (account.account_id, account.display_name or "")),),
    dated=DateRange("updated", "Updated from", lambda account: account.data.get("updated_at_ms")),
    sorts={"account": by("account_id"), "kind": lambda account: account.data["kind"],
           "status": lambda account: account.data["status"],
           "updated": lambda account: account.data.get("updated_at_ms") or 0},
    default_sort="account", identity=by("account_id"), descending_first=frozenset({"updated"}))
AccountFilter = ACCOUNT_LISTING.form_class(AccountKinds)


def for_kinds(*kinds: str) -> dict[str, str]:
    """The attribute that shows a field only for these account kinds (static/console/account_kind.js)."""
    return {"data-for-kinds": " ".join(kinds)}


def display_name_field() -> forms.CharField:
    return forms.CharField(max_length=MAX_DISPLAY_NAME_CHARS, required=False, label="Display name",
                           help_text=DISPLAY_NAME_HELP, widget=forms.TextInput(attrs=for_kinds(*RECIPIENT_KINDS)))


def cleaned_display_name(text: str) -> str:
    """The name as the ledger will store it (NFC), or the ledger's own reason for refusing it, on the field."""
    if not text:
        return ""
    try:
        return valid_display_name(text)
    except ValueError as error:
        raise forms.ValidationError(f"{str(error)[0].upper()}{str(error)[1:]}.") from None


class ProvisionForm(CommandForm):
    kind = forms.ChoiceField(choices=[(k, k) for k in KINDS])
    account_id = forms.RegexField(regex=f"^{IDENTIFIER_PATTERN}$", label="Account ID",
                                  help_text="Staff: their sign-in name. Others: keep the generated opaque ID.")
    identity = forms.CharField(max_length=200, label="Identity evidence",
                               help_text="Staff: work email, where their enrolment link goes. Others: the verified "
                                         "provider subject. The ledger keeps only its digest.")
    display_name = display_name_field()
    roles = forms.MultipleChoiceField(choices=(), required=False, help_text=f"{STAFF_ROLES_NOTE} {DUTIES_NOTE}",
                                      widget=forms.CheckboxSelectMultiple(attrs=for_kinds("staff", "worker")))
    payout_address = forms.RegexField(regex=r"^0x[0-9a-f]{64}$", required=False,
                                      help_text="Artists and operators only: 0x and 64 hex digits.",
                                      widget=forms.TextInput(attrs=for_kinds(*RECIPIENT_KINDS)))

    def __init__(self, *args, four_eyes: bool, **kwargs) -> None:
        kwargs.setdefault("initial", {}).setdefault("account_id", f"acct-{new_command_id()}")
        super().__init__(*args, **kwargs)
        self.four_eyes = four_eyes
        self.fields["roles"].choices = roles_by_holder()
        if four_eyes:
            self.fields["roles"].help_text = f"{STAFF_ROLES_NOTE} {PROVISION_GUARDED_NOTE} {DUTIES_NOTE}"

    def clean_display_name(self) -> str:
        return cleaned_display_name(self.cleaned_data["display_name"])

    def clean(self):
        data = super().clean()
        kind = data.get("kind", "")
        if kind in PERSON_KINDS:
            if not forms.RegexField(regex=STAFF_NAME).clean(data.get("account_id", "")):
                self.add_error("account_id", "A staff account ID is a sign-in name: letters, digits and . @ + -")
            try:
                forms.EmailField().clean(data.get("identity", ""))
            except forms.ValidationError:
                self.add_error("identity", "A staff member's identity is their work email: the link goes there.")
        if kind not in RECIPIENT_KINDS:
            if data.get("display_name"):
                self.add_error("display_name", f"Only artists and operators have a display name, not a {kind}.")
            if data.get("payout_address"):
                self.add_error("payout_address", f"Only artists and operators are paid, not a {kind}.")
        held_elsewhere = sorted(set(data.get("roles", [])) - set(service.roles_for(kind)))
        if held_elsewhere:
            self.add_error("roles", f"A {kind} account cannot hold {', '.join(held_elsewhere)}."
                                    + (f" {STAFF_ROLES_NOTE}" if kind in PERSON_KINDS else ""))
        elif duties_error(data.get("roles", [])):
            self.add_error("roles", duties_error(data["roles"]))
        return data

    def requested_roles(self) -> list[str]:
        """The guarded roles ticked that go to a second admin as staff changes: every one once two admins govern."""
        return service.guarded(self.cleaned_data["roles"]) if self.four_eyes else []


class ChangeForm(CommandForm):
    """The roles the account's kind may hold (less finance and admin once two admins are active), its status and,
    for an artist or operator, its display name."""

    revision = forms.IntegerField(min_value=1, widget=forms.HiddenInput)  # the revision the admin saw
    roles = forms.MultipleChoiceField(choices=(), required=False, widget=forms.CheckboxSelectMultiple)
    active = forms.BooleanField(required=False, help_text="Untick to deactivate the account.")

    def __init__(self, *args, kind: str, four_eyes: bool, guarded: list[str], **kwargs) -> None:
        """``guarded``: the guarded roles of an active account whose deactivation needs a second admin."""
        super().__init__(*args, **kwargs)
        if kind in RECIPIENT_KINDS:
            self.fields["display_name"] = display_name_field()
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

    def clean_display_name(self) -> str:
        return cleaned_display_name(self.cleaned_data["display_name"])

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
    read = read_view(lambda view: paginate(ACCOUNT_LISTING.apply(account_queries.accounts(view, **filters), query),
                                           page_number(request)))
    rows = [(account, seal(HANDLE, account.account_id)) for account in read.data.items]
    return render_screen(request, "console/accounts.html", ACCOUNTS.title, read, page=read.data, rows=rows,
                         query=query, filter_form=filter_form,
                         may_provision=may_submit(request.user, "RegisterAccount"))


def account_new(request):
    read = read_view(account_queries.four_eyes)
    form = ProvisionForm(request.POST or None, four_eyes=read.data)
    if request.method == "POST" and form.is_valid():
        data, requested = form.cleaned_data, form.requested_roles()
        try:
            outcome = actions.run(request, data["command_id"], "RegisterAccount", lambda: service.provision(
                account_id=data["account_id"], kind=data["kind"], identity=data["identity"],
                roles=[role for role in data["roles"] if role not in requested],
                payout_address=data["payout_address"], display_name=data["display_name"]))
        except actions.ActionRefused as error:
            form.add_error(None, str(error))
        else:
            actions.report(request, outcome, f"Account {data['account_id']} provisioned")
            if outcome.accepted:
                if data["kind"] in PERSON_KINDS:
                    _new_staff_user(request, data)
                _request_roles(request, data, requested)
                return redirect(account_url(data["account_id"]))
            retry = {name: value for name, value in data.items() if name != "command_id"}
            form = ProvisionForm(initial=retry, four_eyes=read.data)  # that command ID is spent
    return render_screen(request, "console/account_new.html", "Provision an account", read, form=form,
                         four_eyes=read.data)


def _request_roles(request, data: dict, roles: list[str]) -> None:
    """A staff change granting each guarded role the new account was ticked for, under an ID derived from the
    form's: a form answered again files none twice."""
    account_id = data["account_id"]
    for role in roles:
        command_id = derived_command_id(f"grant-{role}", data["command_id"])
        try:
            outcome = actions.run(request, command_id, "RequestStaffChange",
                                  partial(staff_changes.request, command_id, account_id, f"grant_role:{role}"))
        except actions.ActionRefused as error:
            messages.error(request, f"{account_id} is provisioned without {role}: requesting it was refused "
                                    f"({error}). Request it again below.")
            continue
        actions.report(request, outcome, _requested(request, role, account_id, staff_changes.change_id_for(command_id),
                                                    answered_before=outcome.duplicate))


def _requested(request, role: str, account_id: str, change_id: str, *, answered_before: bool) -> str:
    """What became of the staff change granting ``role``: awaiting another admin, or, for a form answered before,
    decided meanwhile."""
    change = read_view(lambda view: staff_queries.change(view, change_id)).data
    if answered_before and change is not None and change["status"] != "pending":
        decided_by = (change.get("decision") or {}).get("decided_by")
        return (f"Granting {role} to {account_id} was requested, and is {change['status']}"
                + (f" by {decided_by}" if decided_by else ""))
    return f"Granting {role} to {account_id} is requested: {_approvers(request)} approves it under Staff changes"


def _approvers(request) -> str:
    """Who may approve a staff change the signed-in admin requested: every other active admin who signs in to the
    console (a staff account), by name."""
    admins = read_view(lambda view: account_queries.accounts(view, kind="staff", status="active", role="admin")).data
    others = [admin.account_id for admin in admins if admin.account_id != actor_id(request.user)]
    return f"another admin ({', '.join(others)})" if others else "another admin, once one is provisioned,"


def _new_staff_user(request, data: dict) -> None:
    """The console user for a new staff account, and the first enrolment link (recorded by the ledger first).

    The user gets the roles and status the ledger holds now, not the form's: a provisioning form
    answered again after the account changed must not bring back what the change took away.
    """
    account = read_view(lambda view: account_queries.account(view, data["account_id"])).data
    assert account is not None, data["account_id"]  # registered by the accepted command this follows
    user, _ = sync_user(account.account_id, roles=account.roles, active=account.active,
                        email=data["identity"].strip().lower())
    if has_enrolled(user) or not account.active:
        return
    _send_link(request, user, derived_command_id("first-enrolment-link", data["command_id"]))


def _send_link(request, user: User, command_id: str) -> None:
    try:
        enrolment.require_not_enrolled(user)
        enrolment.require_deliverable(user)
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
        link = enrolment.create_link(user, link_id, issued_by=actor_id(request.user))
    except enrolment.EnrolmentRefused as error:  # another admin's link was recorded after this one
        messages.info(request, str(error))
        return
    messages.success(request, f"An enrolment link went to {user.username}'s work email; it expires at "
                              f"{link.expires_at:%Y-%m-%d %H:%M} UTC. Enrolment is pending until they use it.")


def account_detail(request, handle: str):
    account_id = unseal_id(HANDLE, handle)
    read = read_view(lambda view: service.account_page(view, account_id))
    account, four_eyes = read.data.account, read.data.four_eyes
    if account is None:
        raise Http404("no such account")
    user = User.objects.filter(username=account_id).first() if account.data["kind"] in PERSON_KINDS else None
    guarded = service.guarded(account.roles) if four_eyes and account.active else []
    form = ChangeForm(request.POST or None, kind=account.data["kind"], four_eyes=four_eyes, guarded=guarded,
                      initial={"roles": account.roles, "active": account.active, "revision": account.revision,
                               "display_name": account.display_name or ""})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        roles = sorted(set(data["roles"]) | set(service.guarded(account.roles) if four_eyes else ()))
        try:
            outcome = actions.run(request, data["command_id"], "RegisterAccount", lambda: service.change(
                account, roles=roles, active=data["active"], seen_revision=data["revision"],
                display_name=data.get("display_name")))
        except actions.ActionRefused as error:
            form.add_error(None, str(error))
        else:
            actions.report(request, outcome, f"Account {account_id} changed")
            if outcome.accepted:  # as the ledger holds the account now, whichever command this answer was
                sync_from_ledger(account_id)
            return redirect(account_url(account_id))
    return render_screen(request, "console/account_detail.html", f"Account {account_id}", read, form=form,
                         account=account, recipient=read.data.recipient, actor_roles=read.data.actor_roles,
                         four_eyes=four_eyes, staff_changes=_listed(read.data.staff_changes), handle=handle,
                         own_account=account_id == actor_id(request.user),
                         may_change=may_submit(request.user, "RegisterAccount"), console_user=user,
                         enrolment=enrolment.status(user) if user else None,
                         request_form=StaffRequestForm(account=account), link_form=CommandForm())


def _listed(changes: list[StaffChange]) -> list[dict]:
    """The account's staff changes as its page lists them: each with its handle and what it asks for."""
    return [{**change, "handle": seal("staff-change", change["change_id"]),
             "description": staff_changes.describe(change)} for change in changes]


@require_POST
def request_change(request, handle: str):
    account_id = unseal_id(HANDLE, handle)
    account = read_view(lambda view: account_queries.account(view, account_id)).data
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
