"""Self-service: enrolling through a one-time link, and changing one's own password.

These are the only pages that show an authenticator secret, and they show it
only to the holder of the link, who is signing in as that user. Each change is
recorded by the ledger as the owner's own before Django keeps it.
"""

from __future__ import annotations

from base64 import b32encode

import django_otp
import qrcode
import qrcode.image.svg
from django import forms
from django.contrib import admin, messages
from django.contrib.auth import login, password_validation, update_session_auth_hash
from django.contrib.auth.forms import PasswordChangeForm
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.safestring import mark_safe
from django_otp.plugins.otp_totp.models import TOTPDevice

from ledger_engine.application.transition import CommandOutcome
from ledger_engine.errors import LedgerError
from porto_console.console import actions, commands
from porto_console.console.forms import CommandForm
from porto_console.console.models import EnrolmentLink
from porto_console.console.services import enrolment
from porto_console.console.views.errors import _page

SESSION_KEY = "porto_enrolment_link"
MAX_FAILURES = 5
CODE = forms.RegexField(regex=r"^[0-9]{6}$", max_length=6, widget=forms.TextInput(
    attrs={"autocomplete": "one-time-code", "inputmode": "numeric"}))


def enrol_start(request, token: str):
    """The emailed link, spent by its first opening: this browser's session holds it, and no later URL has it."""
    link = enrolment.link_for(token)
    if link is None:
        return _invalid(request)
    link_id, claim = _held(request)
    if link_id == link.link_id and enrolment.claimed(link, claim):  # this browser opened it first
        return redirect("enrol")
    opened = enrolment.open_once(link)
    if opened is not None:
        request.session[SESSION_KEY] = {"link_id": link.link_id, "claim": opened}
        return redirect("enrol")
    link.refresh_from_db(fields=["opened_at"])
    if link.opened_at is None:  # used up, replaced or expired before anyone opened it
        return _invalid(request)
    enrolment.refuse_second_open(link)
    return _page(request, "console/enrol_refused.html", 403, "Enrolment link already opened")


def _held(request) -> tuple[str, str]:
    """The link ID and the claim on it that this browser's session holds, if any."""
    held = request.session.get(SESSION_KEY)
    return (held.get("link_id", ""), held.get("claim", "")) if isinstance(held, dict) else ("", "")


def _invalid(request):
    return _page(request, "console/enrol_invalid.html", 404, "Enrolment link not valid")


class EnrolForm(forms.Form):
    """What the link's owner sets, and the proof of the factor they keep when only one was reset."""

    def __init__(self, *args, link: EnrolmentLink, device: TOTPDevice | None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.link, self.device = link, device
        if "password" in link.factors:
            self.fields["password1"] = forms.CharField(label="New password", widget=forms.PasswordInput(
                attrs={"autocomplete": "new-password"}), help_text=password_validation.password_validators_help_text_html())
            self.fields["password2"] = forms.CharField(label="New password again", widget=forms.PasswordInput(
                attrs={"autocomplete": "new-password"}))
        else:
            self.fields["current_password"] = forms.CharField(label="Your current password", widget=forms.PasswordInput(
                attrs={"autocomplete": "current-password"}))
        self.fields["otp_token"] = forms.RegexField(
            regex=CODE.regex, max_length=6, widget=CODE.widget,
            label="Code from the new authenticator" if device else "Code from your authenticator")

    def clean(self):
        data = super().clean()
        user = self.link.user
        if "password1" in self.fields and data.get("password1"):
            if data["password1"] != data.get("password2"):
                self.add_error("password2", "The two passwords differ.")
            else:
                try:
                    password_validation.validate_password(data["password1"], user)
                except forms.ValidationError as error:
                    self.add_error("password1", error)
        if "current_password" in self.fields and not user.check_password(data.get("current_password", "")):
            self.add_error("current_password", "That is not your current password.")
        token = data.get("otp_token")
        devices = [self.device] if self.device else list(TOTPDevice.objects.filter(user=user, confirmed=True))
        # The code is checked last, so a mistake elsewhere does not spend it.
        if token and not self.errors and not any(device.verify_token(token) for device in devices):
            self.add_error("otp_token", "That code is not valid (or was already used). Enter the current code.")
        return data


def enrol(request):
    link = enrolment.claimed_link(*_held(request))
    if link is None:
        return _invalid(request)
    device = enrolment.pending_device(link) if "authenticator" in link.factors else None
    form = EnrolForm(request.POST or None, link=link, device=device)
    if request.method == "POST":
        if form.is_valid():
            outcome = enrolment.complete(link, password=form.cleaned_data.get("password1"))
            if outcome.accepted:
                return _signed_in(request, link)
            form.add_error(None, f"The ledger refused to record your enrolment: {outcome.code} "
                                 f"({outcome.result.get('detail', '')}). Ask your admin for a new link.")
        else:
            _count_failure(link)
    return TemplateResponse(request, "console/enrol.html", {
        "title": f"Set up your sign-in, {link.user.username}", "form": form, "link": link,
        "qr_svg": _qr(device) if device else None,
        "secret": b32encode(device.bin_key).decode() if device else None})


def _signed_in(request, link: EnrolmentLink):
    # The claim stays in the session: the owner opening their used link again here is no second browser.
    login(request, link.user, backend="django.contrib.auth.backends.ModelBackend")
    device = TOTPDevice.objects.filter(user=link.user, confirmed=True).first()
    if device is not None:
        django_otp.login(request, device)
    messages.success(request, "Your sign-in is set up; the ledger recorded your enrolment.")
    return redirect("admin:index")


def _count_failure(link: EnrolmentLink) -> None:
    """A link used to guess at a password or code dies after a few tries."""
    link.failures += 1
    if link.failures >= MAX_FAILURES:
        link.revoked_at = timezone.now()
    link.save(update_fields=["failures", "revoked_at"])


def _qr(device: TOTPDevice) -> str:
    image = qrcode.make(device.config_url, image_factory=qrcode.image.svg.SvgPathImage, box_size=8)
    return mark_safe(image.to_string(encoding="unicode"))  # our own SVG: a path, no script


class OwnPasswordForm(PasswordChangeForm, CommandForm):
    """Django's password change, as one ledger-recorded command."""


def _recorded_change(request, form: OwnPasswordForm) -> CommandOutcome | None:
    """The ledger's new record of this password change; or None, with the reason on the form.

    Each change of password is its own record, so a form the ledger answered before is spent.
    """
    record = commands.CommandRequest("RecordProfileChange", {"account_id": request.user.username,
                                                             "change": "password_changed"})
    try:
        outcome = commands.submit(request.user.username, form.cleaned_data["command_id"], record)
    except LedgerError as error:
        form.add_error(None, actions.refusal(error))
        return None
    if outcome.duplicate:
        form.add_error(None, f"This form was already submitted (ledger sequence {outcome.sequence}); nothing "
                             "changed now. Open the page again to change your password.")
        return None
    if not outcome.accepted:
        form.add_error(None, f"Not allowed: {outcome.code}: {outcome.result.get('detail', '')}")
        return None
    return outcome


def password_change(request):
    """A signed-in user changes their own password; the ledger records it first."""
    form = OwnPasswordForm(request.user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        outcome = _recorded_change(request, form)
        if outcome is not None:
            form.save()
            update_session_auth_hash(request, form.user)
            messages.success(request, f"Password changed (ledger sequence {outcome.sequence}).")
            return redirect("admin:index")
    return TemplateResponse(request, "console/password_change.html", {
        **admin.site.each_context(request), "title": "Change your password", "form": form})
