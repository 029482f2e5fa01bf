"""Every environment variable the console, its server and the effect workers read, named once here.

Each is a field: its variable, its type, its default and what it is for. ``read_environment()`` reads the process's
variables (or the ones it is given) at start; a value that does not parse, such as a port that is not a number
or a chain nobody knows, refuses the whole environment with a message naming each variable at fault
(``NotConfigured``). An empty variable counts as unset. Secrets come inline (``NAME``) or from the file
``NAME_FILE`` names, never both, and are read only by the process that asks for them. No Django here: the
workers read this too (docs/adr/0096). The fields, secrets and reading are the engine's
(``ledger_engine/environment.py``), and so are the variables both read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from ledger_engine.environment import (
    EngineEnvironment, EnvironmentRefused, GenesisHash, Secret, TypedEnvironment, read_typed, refuse, secret, variable,
)
from ledger_engine.open_json import Unvalidated

BASE_DIR = Path(__file__).resolve().parent.parent
EMBEDDED_BROKER = "memory://"
MAINNET_USDC_METADATA = "0xbae207659db88bea0cbead6da0ed00aac12edcdda169e591cd41c94180b46f3b"


# A setting the requested work needs is missing or malformed: the engine's refusal under the console's name, since
# the reading and the secrets are the engine's and raise it where the console's callers catch ``NotConfigured``.
NotConfigured = EnvironmentRefused


def _digits_only(text: Any) -> Any:
    if isinstance(text, str) and not text.isdigit():
        raise refuse("must be a whole number written in digits")
    return text


def _zero_or_one(text: Any) -> Any:
    if isinstance(text, str):
        if text not in ("0", "1"):
            raise refuse("must be 1 (on) or 0 (off)")
        return text == "1"
    return text


def _comma_separated(text: Any) -> Any:
    return tuple(item for item in text.split(",") if item) if isinstance(text, str) else text


WholeNumber = Annotated[int, BeforeValidator(_digits_only), Field(ge=0)]
Switch = Annotated[bool, BeforeValidator(_zero_or_one)]
Names = Annotated[tuple[str, ...], BeforeValidator(_comma_separated)]
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]


def engine_field(name: str) -> Any:
    """A variable the engine reads too: its field as ``EngineEnvironment`` defines it, described there once."""
    return EngineEnvironment.model_fields[name]


def beside_the_data(name: str) -> Callable[[Unvalidated], Path]:
    """A default next to the ledger's data directory, never inside it."""
    return lambda above: above["data_dir"].parent / name


def under_var(*parts: str) -> Callable[[Unvalidated], Path]:
    return lambda above: above["var_dir"].joinpath(*parts)


class Environment(TypedEnvironment):
    """The console's variables, its server's and the workers'. Built by ``read_environment``."""

    # Where things live.
    var_dir: Path = variable("PORTO_VAR_DIR", BASE_DIR / "var", "the host's working directory: database, logs, mail")
    data_dir: Path = variable("DATA_DIR", under_var("ledger"), "the ledger this process owns; only one process may")
    admission_dir: Path = variable("ADMISSION_DIR", beside_the_data("admission"),
                                   "the admission gateway's durable envelopes and evidence")
    database_url: str = variable("DATABASE_URL", lambda above: f"sqlite:///{above['var_dir'] / 'console.sqlite3'}",
                                 "Django's own database (PostgreSQL in CI and deployment)")

    # The console's keys and Django.
    debug: Switch = variable("DJANGO_DEBUG", False, "Django's debug pages; never outside a developer's machine")
    secret_key: Secret = secret("DJANGO_SECRET_KEY", "Django's signing key; the console refuses the built-in one "
                                                     "outside the labelled demo")
    handle_key: Secret = secret("PORTO_HANDLE_KEY", "seals ledger IDs into URL handles")
    step_up_key: Secret = secret("PORTO_STEP_UP_KEY", "Ed25519 private key, hex: signs step-up proofs")
    identity_key: Secret = secret("PORTO_IDENTITY_KEY", "keys accounts' identity digests; kept while any account "
                                                        "made under it exists")
    checkpoint_key: Secret = secret("PORTO_CHECKPOINT_KEY", "32-byte Ed25519 seed, hex: signs the checkpoint every "
                                                            "statement file carries")
    checkpoint_origin: str = variable("PORTO_CHECKPOINT_ORIGIN", "porto.example/statements",
                                      "the checkpoint key's origin, pinned on /verify/")
    metrics_token: Secret = secret("PORTO_METRICS_TOKEN", "the scraper's bearer token; without one /metrics is off")
    genesis_hash: GenesisHash | None = engine_field("genesis_hash")
    allowed_hosts: Names = variable("DJANGO_ALLOWED_HOSTS", ("localhost", "127.0.0.1", "[::1]", "testserver"),
                                    "host names the console answers to, comma-separated")
    day_allocation_in_background: Switch = variable("PORTO_DAY_ALLOCATION_IN_BACKGROUND", True,
                                                    "the console's process runs and resumes day allocations")

    # Backups (docs/effects.md).
    backup_dir: Path = variable("PORTO_BACKUP_DIR", beside_the_data("backups"), "the local restic repository")
    backup_repository: str = variable("PORTO_BACKUP_REPOSITORY", lambda above: str(above["backup_dir"]),
                                      "restic's repository: a path, or sftp:user@host:/path off the ledger host")
    backup_staging_dir: Path = variable("PORTO_BACKUP_STAGING_DIR", beside_the_data("backup-staging"),
                                        "where a backup is put together before restic takes it")
    backup_sftp_command: str | None = variable("PORTO_BACKUP_SFTP_COMMAND", None, "restic's sftp.command")
    backup_password: Secret = engine_field("restic_password")
    backup_interval_secs: WholeNumber = variable("PORTO_BACKUP_INTERVAL_SECS", 240, "how often a backup is due")
    backup_tick_secs: Seconds = variable("PORTO_BACKUP_TICK_SECS", 30.0,
                                         "how often the owner and beat look whether a backup is due")
    restic_binary: str = variable("PORTO_RESTIC", "restic", "the restic program")

    # Behind the TLS proxy (docs/deployment.md).
    trusted_proxy: str | None = variable("PORTO_TRUSTED_PROXY", None, "the proxy's address; its forwarded "
                                                                      "headers alone are trusted")
    hsts_seconds: WholeNumber = variable("PORTO_HSTS_SECONDS", 365 * 24 * 3600, "HSTS max-age behind the proxy")
    hsts_include_subdomains: Switch = variable("PORTO_HSTS_INCLUDE_SUBDOMAINS", False, "HSTS for subdomains too")
    secure_cookies: Switch = variable("PORTO_SECURE_COOKIES", lambda above: above["trusted_proxy"] is not None,
                                      "cookies over HTTPS only; on behind the proxy")
    csrf_trusted_origins: Names = variable("PORTO_CSRF_TRUSTED_ORIGINS", (), "origins forms may come from besides "
                                                                             "the console's own, comma-separated")

    # Staff enrolment and mail.
    console_url: str = variable("PORTO_CONSOLE_URL", "http://127.0.0.1:8000", "where staff reach the console")
    enrolment_link_ttl_s: WholeNumber = variable("PORTO_ENROLMENT_LINK_TTL_S", 24 * 3600,
                                                 "how long an enrolment link lasts unopened")
    enrolment_link_open_ttl_s: WholeNumber = variable("PORTO_ENROLMENT_LINK_OPEN_TTL_S", 15 * 60,
                                                      "how long enrolment lasts once its link is opened")
    email_backend: str = variable("DJANGO_EMAIL_BACKEND", "django.core.mail.backends.filebased.EmailBackend",
                                  "Django's mail backend")
    mail_dir: Path = variable("PORTO_MAIL_DIR", under_var("mail"), "where the file mail backend writes")
    default_from_email: str = variable("DJANGO_DEFAULT_FROM_EMAIL", "Porto console <console@porto.invalid>",
                                       "the sender of the console's mail")

    # Logs and the server.
    log_dir: Path = variable("PORTO_LOG_DIR", under_var("log"), "the console's rotating log file")
    log_format: Literal["json", "plain"] = variable("PORTO_LOG_FORMAT", "json", "one JSON object a line, or text")
    host: str = variable("HOST", "127.0.0.1", "the address the console listens on")
    port: WholeNumber = variable("PORT", 8000, "the port the console listens on", le=65535)
    threads: WholeNumber = variable("PORTO_THREADS", 8, "waitress's thread pool", ge=1)

    # The effect workers (docs/effects.md).
    chain: Literal["simulated", "aptos"] = variable("PORTO_CHAIN", "simulated", "the chain payments go to")
    chain_url: str = variable("PORTO_CHAIN_URL", "http://127.0.0.1:8010", "the node's REST base URL, without /v1")
    chain_id: WholeNumber = variable("PORTO_CHAIN_ID", 4, "the chain id signed into every transaction")
    usdc_metadata: str = variable("PORTO_USDC_METADATA", MAINNET_USDC_METADATA, "the USDC fungible-asset metadata "
                                                                                "address")
    signer_key: Secret = secret("PORTO_SIGNER_KEY", "the payer's Ed25519 key (hex or AIP-80); none: no signing")
    committer_key: Secret = secret("PORTO_COMMITTER_KEY", "the committer's Ed25519 key, which anchors batches")
    transaction_ttl_secs: WholeNumber = variable("PORTO_TRANSACTION_TTL_SECS", 120,
                                                 "how long a signed transaction may land")
    max_gas_amount: WholeNumber = variable("PORTO_MAX_GAS_AMOUNT", 2_000, "the gas a transaction may use")
    gas_unit_price: WholeNumber = variable("PORTO_GAS_UNIT_PRICE", 100, "the price offered per unit of gas")
    payment_journal: Path = variable("PORTO_PAYMENT_JOURNAL", under_var("effects", "signed-payments.jsonl"),
                                     "the independent signed-payment journal file")
    commitment_journal: Path = variable("PORTO_COMMITMENT_JOURNAL", under_var("effects", "signed-commitments.jsonl"),
                                        "the independent signed-commitment journal file")
    signer_journal_url: Secret = secret("PORTO_SIGNER_JOURNAL_URL", "PostgreSQL for both journals and the "
                                                                    "quarantine, for signers on several hosts")
    quarantine_dir: Path = variable("PORTO_QUARANTINE_DIR", under_var("effects", "quarantine"),
                                    "effects parked for an operator")
    internal_api_url: str = variable("PORTO_INTERNAL_API_URL", "http://127.0.0.1:8000/internal",
                                     "the console's internal API")
    worker_id: str | None = variable("PORTO_WORKER_ID", None, "this worker's ledger actor")
    worker_token: Secret = secret("PORTO_WORKER_TOKEN", "this worker's bearer credential")
    observer_id: str | None = variable("PORTO_OBSERVER_ID", None, "a payment worker's second actor, which records "
                                                                  "what the chain did (docs/adr/0090)")
    observer_token: Secret = secret("PORTO_OBSERVER_TOKEN", "the observer actor's bearer credential")
    claim_ttl_ms: WholeNumber = variable("PORTO_CLAIM_TTL_MS", 60_000, "how long a claim on an effect lasts")
    observe_window_secs: WholeNumber = variable("PORTO_OBSERVE_WINDOW_SECS", 20, "how long the payer's follower "
                                                                                 "waits on its sequence's head")
    payer_window: WholeNumber = variable("PORTO_PAYER_WINDOW", 100, "sequences the payer may have in flight",
                                         ge=1)

    # Celery.
    celery_broker_url: str | None = variable("CELERY_BROKER_URL", None,
                                             "the workers' broker (Redis); none: tasks run where they are sent")
    celery_result_backend: str = variable("CELERY_RESULT_BACKEND", "cache+memory://", "Celery's result backend")
    effects_enabled: Switch = variable(
        "PORTO_EFFECTS_ENABLED", lambda above: above["celery_broker_url"] is not None and above["signer_key"].given,
        "announce new effects to the workers after commit; on with a broker and a signer key")
    celery_visibility_secs: WholeNumber = variable("PORTO_CELERY_VISIBILITY_SECS", 3600,
                                                   "how long an unacknowledged message waits to be handed out again")
    sweep_secs: Seconds = variable("PORTO_SWEEP_SECS", 30.0, "how often beat sweeps for effects to queue")
    queued_mark_secs: WholeNumber = variable("PORTO_QUEUED_MARK_SECS",
                                             lambda above: above["celery_visibility_secs"] + 60,
                                             "how long a queued mark lasts; past the visibility timeout")
    retry_backoff_max_secs: WholeNumber = variable("PORTO_RETRY_BACKOFF_MAX_SECS", 300,
                                                   "the longest wait between a task's retries")

    @model_validator(mode="after")
    def _backups_outside_the_data(self) -> Environment:
        if self.backup_dir.resolve().is_relative_to(self.data_dir.resolve()):
            raise refuse(f"PORTO_BACKUP_DIR {self.backup_dir.resolve()} is inside the ledger data directory")
        return self

    @property
    def broker_url(self) -> str:
        return self.celery_broker_url or EMBEDDED_BROKER


def read_environment(variables: Mapping[str, str] | None = None) -> Environment:
    """The environment, typed: ``variables``, or this process's own; ``NotConfigured`` names what is wrong."""
    return read_typed(Environment, variables)
