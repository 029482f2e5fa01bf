"""Staff changes by two admins: the ledger's requests and decisions, and their Django side afterwards.

One admin requests (``RequestStaffChange``), another decides with a step-up
proof (``DecideStaffChange``); the ledger enforces both. Only an approved
change is carried out in Django: groups and status follow the ledger's
account, a reset clears the password or the authenticators and sends the owner
an enrolment link. A reset, a role removed and a deactivation end the
owner's sessions (``console/proof_version.py``). Each change is carried out
once, remembered by an ``AppliedStaffChange`` row written with it;
``apply_approved`` finds every approved change not yet carried out (after a
crash, say) and finishes it.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django_otp.plugins.otp_totp.models import TOTPDevice

from ledger_engine.adapters.gateway import derived_command_id
from ledger_engine.domain.actors import role_conflict
from ledger_engine.domain.commands.staff_changes import CREDENTIAL_RESETS
from ledger_engine.domain.schema.staff import StaffChange
from ledger_engine.open_json import Unvalidated
from ledger_engine.selectors import account_queries, staff_queries
from porto_console.console import commands, proof_version
from porto_console.console.commands import CommandRequest
from porto_console.console.models import AppliedStaffChange, EnrolmentLink
from porto_console.console.services import enrolment
from porto_console.console.services.users import sync_from_ledger
from porto_console.ledger import read_view

STATUSES = ("pending", "approved", "declined", "expired")
# What an admin may ask for on a staff account's page, as (kind, role) with a label.
REQUESTS = {
    "grant_role:finance": "Grant the finance role",
    "grant_role:admin": "Grant the admin role",
    "remove_role:finance": "Remove the finance role",
    "remove_role:admin": "Remove the admin role",
    "reset_password": "Reset the password (the owner sets a new one through a link)",
    "reset_authenticator": "Reset the authenticator (the owner enrols a new one through a link)",
    "reactivate": "Reactivate the account",
    "deactivate": "Deactivate the account",
}


def requests_for(roles: list[str], active: bool) -> list[tuple[str, str]]:
    """The staff changes that would change something for an account holding ``roles`` now, in ``REQUESTS`` order.

    A grant of a role held already, or of one its holder may not hold beside another (admin with finance),
    a removal of a role not held, and a reactivation of an active account are refused by the ledger anyway.
    """
    held = set(roles)

    def fits(choice: str) -> bool:
        kind, _, role = choice.partition(":")
        if kind == "grant_role":
            return active and role not in held and role_conflict(held | {role}) is None
        if kind == "remove_role":
            return role in held
        return not active if kind == "reactivate" else active

    return [(choice, label) for choice, label in REQUESTS.items() if fits(choice)]


def change_id_for(command_id: str) -> str:
    return f"change-{command_id}"


def request(command_id: str, account_id: str, choice: str) -> CommandRequest:
    kind, _, role = choice.partition(":")
    change: Unvalidated = {"kind": kind, "account_id": account_id}
    if role:
        change["role"] = role
    return CommandRequest("RequestStaffChange", {"change_id": change_id_for(command_id), "change": change})


def decide(change_id: str, decision: str, reason: str | None = None) -> CommandRequest:
    payload: Unvalidated = {"change_id": change_id, "decision": decision}
    if reason is not None:
        payload["reason"] = reason
    return CommandRequest("DecideStaffChange", payload)


def describe(record: StaffChange) -> str:
    change = record["change"]
    if change["kind"] == "set_step_up_verifier":
        return f"Register the step-up verifier key {change['public_key'][:16]}…"
    if change["kind"] == "set_payer_address":
        return f"Send payments from the payer address {change['payer_address']}"
    choice = change["kind"] + (f":{change['role']}" if "role" in change else "")
    return REQUESTS.get(choice, choice.replace("_", " ")).split(" (")[0] + f" of {change['account_id']}"


def apply_approved() -> list[str]:
    """Carry out, in Django, every approved change not yet carried out; returns their IDs."""
    applied = []
    done = set(AppliedStaffChange.objects.values_list("change_id", flat=True))
    for record in read_view(lambda view: staff_queries.changes(view, "approved")).data:
        if record["change"]["kind"] in ("set_step_up_verifier", "set_payer_address"):
            continue  # nothing in Django: the ledger holds it (a new step-up key also needs a console restart)
        if record["change_id"] not in done:
            _apply(record)
            applied.append(record["change_id"])
        if record["change"]["kind"] in CREDENTIAL_RESETS:
            _send_reset_link(record)
    return applied


def _apply(record: StaffChange) -> None:
    kind, account_id = record["change"]["kind"], record["change"]["account_id"]
    with transaction.atomic():
        _, created = AppliedStaffChange.objects.get_or_create(change_id=record["change_id"])
        if not created:
            return
        user = User.objects.filter(username=account_id).first()
        if user is None:
            return  # no console user (an administrator named in genesis): nothing to carry out
        if kind == "reset_password":
            user.set_unusable_password()
            user.save(update_fields=["password"])
        elif kind == "reset_authenticator":
            TOTPDevice.objects.filter(user=user).delete()
        if kind in CREDENTIAL_RESETS:
            EnrolmentLink.objects.filter(user=user, used_at=None, revoked_at=None).update(revoked_at=timezone.now())
            proof_version.end_sessions(user)
        else:  # a role removed or a deactivation ends the user's sessions there
            sync_from_ledger(account_id)


def _send_reset_link(record: StaffChange) -> None:
    """The owner's link for an approved reset, recorded as the deciding admin's, once."""
    account_id = record["change"]["account_id"]
    credentials = read_view(lambda view: account_queries.credentials(view, account_id)).data
    user = User.objects.filter(username=account_id).first()
    waiting = credentials is not None and credentials["status"] == "pending" \
        and credentials["staff_change_id"] == record["change_id"]
    link_id = enrolment.link_id_for(record["change_id"])
    if user is None or not waiting or EnrolmentLink.objects.filter(link_id=link_id).exists():
        return
    enrolment.require_deliverable(user)
    decision = record["decision"]
    assert decision is not None, record["change_id"]  # the ledger records an approved change with its decision
    decider = decision["decided_by"]
    outcome = commands.submit(decider, derived_command_id("reset-link", record["change_id"]),
                              enrolment.link_request(account_id, link_id))
    if not outcome.accepted:
        return
    try:
        enrolment.create_link(user, link_id, issued_by=decider)
    except enrolment.EnrolmentRefused:
        return  # an admin sent a newer link since this one was recorded: that one is the owner's
