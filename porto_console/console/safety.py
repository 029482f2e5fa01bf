"""Safe defaults: outside the labelled demo, the console refuses to serve with keys that are not its own.

It also refuses a ledger from any genesis but the one the deployment pins (``PORTO_GENESIS_HASH``): a data
directory, a backup or an export from another genesis can verify on its own terms.

A default ``SECRET_KEY`` is public (it is in this repository), so anyone could
forge sessions with it; sealed handles need a key of their own, so a leaked
session key does not also open every URL; and the step-up key must be one the
ledger trusts, or no approval could ever be proven. The checkpoint key signs
what recipients verify, so it is a key of its own and never the demo's public
one. The labelled demo is the exception: the launcher gives it keys of its own, kept in var/ across restarts,
the demo's own fixture step-up key, which its genesis trusts, and the demo's
labelled checkpoint key.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.demo.builder import DEMO_IDENTITY_KEY, DEMO_STEP_UP_KEY
from ledger_engine.genesis import genesis_hash
from ledger_engine.merkle.checkpoint import DEMO_CHECKPOINT_SEED_HEX
from ledger_engine.selectors import account_queries
from porto_console import statement_files
from porto_console.console import stepup
from porto_console.console.services.demo import is_demo, kept_demo_key

MIN_KEY_CHARS = 32


class UnsafeConfiguration(ImproperlyConfigured):
    """The console must not serve like this; ``problems`` says why, one sentence each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def problems(ledger: LedgerOwner) -> list[str]:
    found = []
    if settings.SECRET_KEY == settings.DEFAULT_SECRET_KEY or len(settings.SECRET_KEY) < MIN_KEY_CHARS:
        found.append(f"DJANGO_SECRET_KEY is the built-in default or shorter than {MIN_KEY_CHARS} characters")
    if not settings.HANDLE_KEY or len(settings.HANDLE_KEY) < MIN_KEY_CHARS:
        found.append(f"PORTO_HANDLE_KEY (the key that seals record handles in URLs) is not set or shorter than "
                     f"{MIN_KEY_CHARS} characters")
    elif settings.HANDLE_KEY == settings.SECRET_KEY:
        found.append("PORTO_HANDLE_KEY must be a key of its own, not DJANGO_SECRET_KEY")
    found.extend(_identity_key_problems())
    found.extend(_step_up_problems(ledger))
    found.extend(_checkpoint_key_problems())
    found.extend(_genesis_problems(ledger))
    if settings.METRICS_TOKEN is not None and len(settings.METRICS_TOKEN) < MIN_KEY_CHARS:
        found.append(f"PORTO_METRICS_TOKEN is shorter than {MIN_KEY_CHARS} characters; unset it to turn /metrics off")
    if not settings.BACKUP_PASSWORD or settings.BACKUP_PASSWORD == settings.DEMO_BACKUP_PASSWORD:
        found.append("RESTIC_PASSWORD (or RESTIC_PASSWORD_FILE), the backup repository's encryption password, "
                     "is not set or is the demo's public one")
    if settings.DEBUG:
        found.append("DJANGO_DEBUG is on: error pages would show settings and tracebacks")
    return found


def _identity_key_problems() -> list[str]:
    key = settings.IDENTITY_KEY
    if not key or len(key) < MIN_KEY_CHARS:
        return [f"PORTO_IDENTITY_KEY (the key of accounts' identity digests) is not set or shorter than "
                f"{MIN_KEY_CHARS} characters"]
    if key.encode() == DEMO_IDENTITY_KEY or key in (settings.SECRET_KEY, settings.HANDLE_KEY):
        return ["PORTO_IDENTITY_KEY must be a key of its own: not the demo's, DJANGO_SECRET_KEY or PORTO_HANDLE_KEY"]
    return []


def _step_up_problems(ledger: LedgerOwner) -> list[str]:
    try:
        ours = stepup.public_key()
    except ImproperlyConfigured as error:
        return [str(error)]
    if ours is None:
        return ["PORTO_STEP_UP_KEY is not set: nobody could approve anything"]
    trusted = ledger.read(account_queries.trusted_step_up_key)
    if trusted is not None and trusted != ours:
        return [f"the ledger trusts step-up key {trusted}, not this console's {ours}: "
                "approvals would all be refused"]
    return []


def _checkpoint_key_problems() -> list[str]:
    """The checkpoint key must be set, well formed, not the demo's public one, and no other secret's."""
    try:
        statement_files.checkpoint_signer()
    except ImproperlyConfigured as error:
        return [str(error)]
    key = settings.CHECKPOINT_KEY.lower()
    if key == DEMO_CHECKPOINT_SEED_HEX:
        return ["PORTO_CHECKPOINT_KEY is the demo's public checkpoint key: anyone could sign statements as Porto"]
    others = {"DJANGO_SECRET_KEY": settings.SECRET_KEY, "PORTO_HANDLE_KEY": settings.HANDLE_KEY,
              "PORTO_IDENTITY_KEY": getattr(settings, "IDENTITY_KEY", None), "PORTO_STEP_UP_KEY": settings.STEP_UP_KEY,
              "PORTO_METRICS_TOKEN": settings.METRICS_TOKEN, "RESTIC_PASSWORD": settings.BACKUP_PASSWORD}
    shared = [name for name, value in others.items() if value and value.lower() == key]
    return [f"PORTO_CHECKPOINT_KEY must be a key of its own, not {shared[0]}"] if shared else []


def _genesis_problems(ledger: LedgerOwner) -> list[str]:
    if settings.GENESIS_HASH is None:
        return [f"PORTO_GENESIS_HASH is not set: recovery could not tell this ledger's history from a "
                f"self-consistent one from another genesis. This ledger's genesis hash is "
                f"{genesis_hash(ledger.genesis())}; set it once you have checked it against the reviewed genesis "
                "document"]
    return _untrusted_genesis(ledger)


def _untrusted_genesis(ledger: LedgerOwner) -> list[str]:
    ours = genesis_hash(ledger.genesis())
    if settings.GENESIS_HASH is not None and settings.GENESIS_HASH != ours:
        return [f"this data directory holds a ledger from genesis {ours}, not the genesis this deployment "
                f"trusts ({settings.GENESIS_HASH})"]
    return []


def prepare(ledger: LedgerOwner) -> list[str]:
    """Make the console safe to serve this ledger, or raise ``UnsafeConfiguration``; returns what it set up.

    A pinned genesis is checked first, the demo's too: a genesis's label is data, so whoever writes the
    data directory can call any ledger the demo.
    """
    untrusted = _untrusted_genesis(ledger)
    if untrusted:
        raise UnsafeConfiguration(untrusted)
    if is_demo(ledger):
        return use_demo_keys()
    found = problems(ledger)
    if found:
        raise UnsafeConfiguration(found)
    return []


def use_demo_keys() -> list[str]:
    """The labelled demo's keys: its own where none is configured, kept across restarts, and its fixture keys."""
    made = []
    if settings.SECRET_KEY == settings.DEFAULT_SECRET_KEY:
        settings.SECRET_KEY = kept_demo_key("SECRET_KEY")
        made.append("the demo's own SECRET_KEY (kept in var/, so a restart signs nobody out)")
    if not settings.HANDLE_KEY:
        settings.HANDLE_KEY = kept_demo_key("HANDLE_KEY")
        made.append("the demo's own handle key (kept in var/, so record links outlive a restart)")
    if not settings.STEP_UP_KEY:
        settings.STEP_UP_KEY = DEMO_STEP_UP_KEY.private_bytes_raw().hex()
        made.append("the demo's fixture step-up key")
    if not settings.CHECKPOINT_KEY:
        settings.CHECKPOINT_KEY = DEMO_CHECKPOINT_SEED_HEX
        made.append("the demo's public checkpoint key (statement files it signs prove nothing)")
    if not settings.IDENTITY_KEY:
        settings.IDENTITY_KEY = DEMO_IDENTITY_KEY.decode()
        made.append("the demo's fixture identity key")
    return made
