"""Console fixtures: a demo ledger, or the payout tests' money world, opened as this process's owner;
signed-in console users."""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.adapters.evidence import EvidenceStore
from ledger_engine.demo import demo_genesis
from ledger_engine.demo.builder import DEMO_STEP_UP_KEY
from ledger_engine.demo.foundation import staff_email
from porto_console import ledger as console_ledger
from porto_console.console.services.demo import load_scenario
from porto_console.console.services.users import ensure_groups, issue_credentials, sync_user
from tests.conftest import EnvelopeFactory
from tests.money_allocation.world import FINANCE, FINANCE_2, MoneyWorld, fixture_commands
from tests.money_payouts.world import PayoutWorld
from tests.support import step_up

DEMO_SEED = 3
# Demo staff in the ledger and the console group each one gets here.
STAFF = {"admin": "demo-admin", "admin2": "demo-admin-2", "finance": "demo-finance-1", "finance2": "demo-finance-2",
         "ops": "demo-ops-1", "auditor": "demo-auditor-1"}
ROLE_OF = {"admin": "admin", "admin2": "admin", "finance": "finance", "finance2": "finance", "ops": "ops",
           "auditor": "auditor"}


ONE_TIME_TOKEN = re.compile(r"/enrol/([A-Za-z0-9_-]{16,})/")


@pytest.fixture(autouse=True)
def no_one_time_token_in_the_logs(monkeypatch):
    """Every line the console's log handlers write during a test, and its log file, hold none of the one-time
    link tokens the test's flows mailed."""
    handlers = {handler for name in ("", *django_settings.LOGGING["loggers"])
                for handler in logging.getLogger(name).handlers}
    written: list[str] = []
    for handler in handlers:
        monkeypatch.setattr(handler, "format", _keeping(handler.format, written))
    log_file = Path(django_settings.LOGGING["handlers"]["file"]["filename"])
    start = log_file.stat().st_size if log_file.exists() else 0
    yield
    tokens = {token for message in getattr(mail, "outbox", []) for token in ONE_TIME_TOKEN.findall(message.body)}
    if tokens and log_file.exists():
        with log_file.open("rb") as log:
            log.seek(start if log_file.stat().st_size >= start else 0)
            written.append(log.read().decode(errors="replace"))
    leaked = sorted({token for token in tokens for text in written if token in text})
    assert not leaked, f"one-time link tokens written to the console's logs: {leaked}"


def _keeping(format_record, written: list[str]):
    def format_and_keep(record: logging.LogRecord) -> str:
        text = format_record(record)
        written.append(text)
        return text

    return format_and_keep


@pytest.fixture(autouse=True)
def effects_settings(settings, tmp_path):
    """Backups and quarantine in this test's own directories; no announcements unless a test turns them on."""
    settings.BACKUP_DIR = settings.BACKUP_REPOSITORY = tmp_path / "backups"
    settings.BACKUP_STAGING_DIR = tmp_path / "backup-staging"
    settings.QUARANTINE_DIR = tmp_path / "quarantine"
    settings.EFFECTS_ENABLED = False
    return settings


@pytest.fixture
def backup_repository(effects_settings, tmp_path, initialised_repository):
    """The configured backup repository, initialised and empty (``tests/support/restic.py``)."""
    return initialised_repository(Path(effects_settings.BACKUP_REPOSITORY), effects_settings.BACKUP_PASSWORD)


@pytest.fixture(scope="session")
def demo_ledger_template(tmp_path_factory) -> Path:
    """The demo scenario journalled once, as ``make run`` loads it; each test opens its own copy."""
    path = tmp_path_factory.mktemp("demo-template") / "ledger"
    with LedgerOwner.open(path, genesis=demo_genesis()) as owner:
        evidence = EvidenceStore(path.parent / "admission" / "evidence")
        assert load_scenario(owner, DEMO_SEED, evidence=evidence) == owner.head().sequence
    return path


@pytest.fixture
def ledger(demo_ledger_template, tmp_path, settings):
    """The console's owner for this test, on a fresh copy of the demo ledger, signing with the demo's step-up key
    (as the launcher does for the demo)."""
    settings.STEP_UP_KEY = DEMO_STEP_UP_KEY.private_bytes_raw().hex()
    path = tmp_path / "ledger"
    shutil.copytree(demo_ledger_template, path)
    shutil.copytree(demo_ledger_template.parent / "admission", tmp_path / "admission")  # the gateway's, beside it
    owner = console_ledger.open_owner(path)
    yield owner
    console_ledger.close_owner()


@pytest.fixture
def users(db):
    """Console users named after the demo staff accounts, each in the group of their ledger role."""
    groups = ensure_groups()
    return {name: sync_user(account, roles=[ROLE_OF[name]], active=True, email=staff_email(account), groups=groups)[0]
            for name, account in STAFF.items()}


@pytest.fixture
def client_as(users, ledger):
    """``client_as("finance")`` is a client signed in as that console user."""

    def sign_in(name: str) -> Client:
        client = Client()
        client.force_login(users[name])
        return client

    return sign_in


@pytest.fixture
def payouts_world(tmp_path):
    """The payout tests' world (payables and confirmed statements for every recipient) on the console's owner."""
    owner = console_ledger.open_owner(tmp_path / "ledger", genesis=step_up.genesis())
    with fixture_commands():
        payouts = PayoutWorld(MoneyWorld(owner, EnvelopeFactory()).setup()).setup()
        payouts.confirmed_statements()
        yield payouts
    console_ledger.close_owner()


@pytest.fixture
def finance(payouts_world, db) -> dict[str, Client]:
    """Two finance users (the world's finance actors), each signed in, with an authenticator."""
    clients = {}
    for name in (FINANCE, FINANCE_2):
        user, _ = sync_user(name, roles=["finance"], active=True)
        issue_credentials(user)
        client = Client()
        client.force_login(user)
        clients[name] = client
    return clients


def code_for(username: str) -> str:
    """The current code of the user's authenticator, as their phone would show it."""
    device = TOTPDevice.objects.get(user__username=username)
    return f"{TOTP(device.bin_key).token():06d}"


def enrolment_link(outbox, username: str) -> str:
    """The path of the newest enrolment link mailed to ``username``: what only its owner reads."""
    user = User.objects.get(username=username)
    mails = [mail for mail in outbox if mail.to == [user.email]]
    assert mails, f"no mail to {user.email}"
    return re.search(r"https?://[^/]+(/enrol/[^/\s]+/)", mails[-1].body).group(1)
