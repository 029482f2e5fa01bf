"""Worker configuration, from the environment only: workers have no Django settings and no ledger.

| variable | meaning | default |
|---|---|---|
| ``PORTO_CHAIN`` | ``simulated`` or ``aptos`` | ``simulated`` |
| ``PORTO_CHAIN_URL`` | the node's REST base URL (without ``/v1``) | ``http://127.0.0.1:8010`` |
| ``PORTO_CHAIN_ID`` | chain id signed into every transaction | ``4`` |
| ``PORTO_USDC_METADATA`` | the USDC fungible-asset metadata address | Aptos mainnet USDC |
| ``PORTO_SIGNER_KEY`` / ``PORTO_SIGNER_KEY_FILE`` | the payer's Ed25519 key (hex or AIP-80) | none: signing refused |
| ``PORTO_COMMITTER_KEY`` / ``PORTO_COMMITTER_KEY_FILE`` | the committer's own Ed25519 key, which anchors batches | none: anchoring refused |
| ``PORTO_TRANSACTION_TTL_SECS`` | how long a signed transaction may land | ``120`` |
| ``PORTO_PAYMENT_JOURNAL`` | the independent signed-payment journal file | ``var/effects/signed-payments.jsonl`` |
| ``PORTO_COMMITMENT_JOURNAL`` | the independent signed-commitment journal file | ``var/effects/signed-commitments.jsonl`` |
| ``PORTO_SIGNER_JOURNAL_URL`` / ``PORTO_SIGNER_JOURNAL_URL_FILE`` | a PostgreSQL URL: both journals and the quarantine live there instead of in files, for signers on several hosts | none: the files |
| ``PORTO_INTERNAL_API_URL`` | the console's internal API | ``http://127.0.0.1:8000/internal`` |
| ``PORTO_WORKER_ID`` / ``PORTO_WORKER_TOKEN`` / ``PORTO_WORKER_TOKEN_FILE`` | this worker's ledger actor and bearer credential | none |
| ``PORTO_OBSERVER_ID`` / ``PORTO_OBSERVER_TOKEN`` / ``PORTO_OBSERVER_TOKEN_FILE`` | a payment worker's second actor and credential (``dispatcher``, ``observer``), under which it records what the chain did with the payments it signed: never the worker's own (docs/adr/0090) | none: a payment worker refuses to start |
| ``PORTO_CLAIM_TTL_MS`` | how long a claim on an effect lasts | ``60000`` |
| ``PORTO_QUARANTINE_DIR`` | effects parked for an operator | ``var/effects/quarantine`` |
| ``PORTO_OBSERVE_WINDOW_SECS`` | how long the payer's follower waits on the head of its sequence before handing over | ``20`` |
| ``PORTO_PAYER_WINDOW`` | how many sequences above the chain's next one the payer may have in flight: a node's mempool takes 100 of one sender | ``100`` |
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

MAINNET_USDC_METADATA = "0xbae207659db88bea0cbead6da0ed00aac12edcdda169e591cd41c94180b46f3b"
CHAIN_KINDS = ("simulated", "aptos")


class NotConfigured(Exception):
    """A setting the requested work needs is missing or malformed."""


@dataclass(frozen=True)
class EffectsConfig:
    chain: str
    chain_url: str
    chain_id: int
    usdc_metadata: str
    # Secrets stay out of the repr, which tracebacks, task reports and test failures print.
    signer_key: str | None = field(repr=False)
    committer_key: str | None = field(repr=False)
    transaction_ttl_secs: int
    max_gas_amount: int
    gas_unit_price: int
    payment_journal: Path
    commitment_journal: Path
    signer_journal_url: str | None = field(repr=False)
    internal_api_url: str
    worker_id: str | None
    worker_token: str | None = field(repr=False)
    observer_id: str | None
    observer_token: str | None = field(repr=False)
    claim_ttl_ms: int
    quarantine_dir: Path
    observe_window_secs: int
    payer_window: int

    @property
    def simulated(self) -> bool:
        return self.chain == "simulated"

    def __post_init__(self) -> None:
        if self.payer_window < 1:
            raise NotConfigured("PORTO_PAYER_WINDOW must be at least 1: no transfer could be signed")
        if bool(self.observer_id) != bool(self.observer_token):
            raise NotConfigured("set PORTO_OBSERVER_ID and PORTO_OBSERVER_TOKEN (or PORTO_OBSERVER_TOKEN_FILE) "
                                "together: the observer's credential acts as the observer's actor")
        if self.observer_id and self.observer_id == self.worker_id:
            raise NotConfigured(f"PORTO_OBSERVER_ID must name another actor than PORTO_WORKER_ID "
                                f"({self.worker_id}): the signer of a payment never records what the chain did "
                                "with it")

    def require_observer(self) -> None:
        """A payment worker records chain observations under a second credential; without one it does not start."""
        if not (self.observer_id and self.observer_token):
            raise NotConfigured(
                "a payment worker needs a second credential for its chain observations: set PORTO_OBSERVER_ID and "
                "PORTO_OBSERVER_TOKEN or PORTO_OBSERVER_TOKEN_FILE (an actor holding dispatcher and observer, "
                "other than PORTO_WORKER_ID: the ledger refuses a signer's observation of its own payment)")

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> "EffectsConfig":
        env = dict(os.environ if env is None else env)
        var_dir = Path(env.get("PORTO_VAR_DIR", Path(__file__).resolve().parents[2] / "var"))
        chain = env.get("PORTO_CHAIN", "simulated")
        if chain not in CHAIN_KINDS:
            raise NotConfigured(f"PORTO_CHAIN must be one of {CHAIN_KINDS}, not {chain!r}")
        return cls(
            chain=chain,
            chain_url=env.get("PORTO_CHAIN_URL", "http://127.0.0.1:8010"),
            chain_id=_integer(env, "PORTO_CHAIN_ID", 4),
            usdc_metadata=env.get("PORTO_USDC_METADATA", MAINNET_USDC_METADATA),
            signer_key=_secret(env, "PORTO_SIGNER_KEY"),
            committer_key=_secret(env, "PORTO_COMMITTER_KEY"),
            transaction_ttl_secs=_integer(env, "PORTO_TRANSACTION_TTL_SECS", 120),
            max_gas_amount=_integer(env, "PORTO_MAX_GAS_AMOUNT", 2_000),
            gas_unit_price=_integer(env, "PORTO_GAS_UNIT_PRICE", 100),
            payment_journal=Path(env.get("PORTO_PAYMENT_JOURNAL", var_dir / "effects" / "signed-payments.jsonl")),
            commitment_journal=Path(env.get("PORTO_COMMITMENT_JOURNAL",
                                            var_dir / "effects" / "signed-commitments.jsonl")),
            signer_journal_url=_secret(env, "PORTO_SIGNER_JOURNAL_URL"),
            internal_api_url=env.get("PORTO_INTERNAL_API_URL", "http://127.0.0.1:8000/internal"),
            worker_id=env.get("PORTO_WORKER_ID"),
            worker_token=_secret(env, "PORTO_WORKER_TOKEN"),
            observer_id=env.get("PORTO_OBSERVER_ID") or None,
            observer_token=_secret(env, "PORTO_OBSERVER_TOKEN"),
            claim_ttl_ms=_integer(env, "PORTO_CLAIM_TTL_MS", 60_000),
            quarantine_dir=Path(env.get("PORTO_QUARANTINE_DIR", var_dir / "effects" / "quarantine")),
            observe_window_secs=_integer(env, "PORTO_OBSERVE_WINDOW_SECS", 20),
            payer_window=_integer(env, "PORTO_PAYER_WINDOW", 100),
        )


def _integer(env: dict[str, str], name: str, default: int) -> int:
    text = env.get(name)
    if text is None:
        return default
    if not text.isdigit():
        raise NotConfigured(f"{name} must be a non-negative integer, not {text!r}")
    return int(text)


def _secret(env: dict[str, str], name: str) -> str | None:
    """A secret given inline (``NAME``) or in a file (``NAME_FILE``), never both."""
    inline, path = env.get(name), env.get(f"{name}_FILE")
    if inline and path:
        raise NotConfigured(f"set {name} or {name}_FILE, not both")
    if path:
        return Path(path).read_text().strip()
    return inline or None
