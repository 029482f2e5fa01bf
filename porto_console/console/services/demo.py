"""The labelled demo: the fixture scenario in a fresh ledger and a console user for each demo staff account.

A demo staff member's sign-in is made once, the first time the console meets
them without one, and kept in ``demo-credentials.json`` beside Django's
database (host-only, mode 0600) so ``manage.py demo_credentials`` can show it
again. A restart never resets it, and never touches an account an admin
provisioned: only the fixture's own staff get demo sign-ins.
"""

from __future__ import annotations

import os
import secrets
from base64 import b32encode
from dataclasses import dataclass
from pathlib import Path

import orjson
from django.conf import settings
from django.contrib.auth.models import User
from django_otp.plugins.otp_totp.models import TOTPDevice

from ledger_engine.adapters.evidence import EvidenceStore
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.demo import DEMO_LABEL
from ledger_engine.demo.foundation import STAFF, staff_email
from ledger_engine.demo.load import DEMO_SEED, load_demo
from ledger_engine.selectors import account_queries
from porto_console.console.roles import CONSOLE_ROLES
from porto_console.console.services.users import ensure_groups, has_enrolled, issue_credentials, sync_user
from porto_console.ledger import read_view

CREDENTIALS_FILE = "demo-credentials.json"
KEYS_FILE = "demo-keys.json"


@dataclass(frozen=True)
class DemoSignIn:
    """A demo staff member's sign-in as the host shows it; ``password`` is None once its owner changed it."""

    username: str
    roles: list[str]
    password: str | None
    totp_secret: str | None
    otpauth_url: str | None


def is_demo(ledger: LedgerOwner) -> bool:
    return ledger.genesis()["label"] == DEMO_LABEL


def load_scenario(ledger: LedgerOwner, seed: int = DEMO_SEED, *, evidence: EvidenceStore) -> int:
    """Journal the demo scenario into an empty demo ledger (``ledger_engine/demo/load.py``, as ``porto-ledger init
    --demo`` does); returns how many commands that took, or 0 for a ledger that is not an empty demo one."""
    if not is_demo(ledger) or ledger.head().sequence != 0:
        return 0
    return load_demo(ledger, evidence, seed)


def demo_users() -> list[DemoSignIn]:
    """Give each active demo staff account without a sign-in a console user with new credentials.

    Returns only the credentials made now: on a restart, nobody who already
    has a password or an authenticator is touched.
    """
    staff = read_view(lambda view: account_queries.accounts(view, kind="staff", status="active")).data
    issued, groups = [], ensure_groups()
    for account in staff:
        roles = [role for role in account.roles if role in CONSOLE_ROLES]
        if account.account_id not in STAFF or not roles:
            continue
        user, _ = sync_user(account.account_id, roles=roles, active=True, email=staff_email(account.account_id),
                            groups=groups)
        if not has_enrolled(user):
            credentials = issue_credentials(user)
            _remember(credentials.username, credentials.password, user.password)
            issued.append(DemoSignIn(user.username, roles, credentials.password, credentials.totp_secret,
                                     credentials.otpauth_url))
    return issued


def demo_sign_ins() -> list[DemoSignIn]:
    """Every demo staff member's sign-in, from the console's database and the remembered passwords."""
    remembered = _remembered()
    found = []
    for user in User.objects.filter(username__in=list(STAFF)).order_by("username"):
        if user.email != staff_email(user.username):
            continue
        password, password_hash = remembered.get(user.username, (None, None))
        device = TOTPDevice.objects.filter(user=user, confirmed=True).first()
        found.append(DemoSignIn(
            user.username, sorted(group.name for group in user.groups.all()),
            password if password_hash == user.password else None,
            b32encode(device.bin_key).decode() if device else None, device.config_url if device else None))
    return found


def sign_in_lines(sign_ins: list[DemoSignIn]) -> list[str]:
    """The sign-ins as the host's terminal shows them; authenticators only for the roles that approve."""
    lines = []
    for sign_in in sign_ins:
        password = sign_in.password or "(changed by its owner)"
        lines.append(f"  {sign_in.username:<18} {','.join(sign_in.roles):<10} password {password}")
        if sign_in.totp_secret and set(sign_in.roles) & {"admin", "finance"}:
            lines.append(f"  {'':<18} {'':<10} TOTP secret {sign_in.totp_secret}")
            lines.append(f"  {'':<18} {'':<10} {sign_in.otpauth_url}")
    return lines


def credentials_path() -> Path:
    return Path(settings.VAR_DIR) / CREDENTIALS_FILE


def _remembered() -> dict[str, tuple[str, str]]:
    path = credentials_path()
    if not path.exists():
        return {}
    return {name: (entry["password"], entry["password_hash"]) for name, entry in orjson.loads(path.read_bytes()).items()}


def _remember(username: str, password: str, password_hash: str) -> None:
    """Keep a demo password for ``demo_credentials``, with the hash it had, to tell when its owner changed it."""
    entries = {name: {"password": secret, "password_hash": digest} for name, (secret, digest) in _remembered().items()}
    entries[username] = {"password": password, "password_hash": password_hash}
    _write_host_only(credentials_path(), entries)


def kept_demo_key(name: str) -> str:
    """A key of the labelled demo's own, made on its first start and kept beside its sign-ins (host-only), so a
    restart neither signs everyone out nor breaks a record link it handed out."""
    path = Path(settings.VAR_DIR) / KEYS_FILE
    keys = orjson.loads(path.read_bytes()) if path.exists() else {}
    if name not in keys:
        keys[name] = secrets.token_urlsafe(48)
        _write_host_only(path, keys)
    return keys[name]


def _write_host_only(path: Path, entries: dict) -> None:
    """``entries`` as JSON at ``path``, readable by this host's user alone, replaced whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(orjson.dumps(entries, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    os.replace(path.with_suffix(".tmp"), path)
