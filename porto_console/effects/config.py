"""Worker configuration, from the environment only: workers have no Django settings and no ledger.

The variables, their types and defaults are the effect workers' part of ``porto_console/environment.py``; a
payment worker also needs ``PORTO_OBSERVER_ID`` with ``PORTO_OBSERVER_TOKEN`` (or ``_FILE``), an actor other than
``PORTO_WORKER_ID`` holding dispatcher and observer (docs/adr/0090).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from porto_console.environment import Environment, NotConfigured, read_environment

__all__ = ["EffectsConfig", "NotConfigured"]


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
        if bool(self.observer_id) != bool(self.observer_token):
            raise NotConfigured("set PORTO_OBSERVER_ID and PORTO_OBSERVER_TOKEN (or PORTO_OBSERVER_TOKEN_FILE) "
                                "together: the observer's credential acts as the observer's actor")
        if self.observer_id and self.observer_id == self.worker_id:
            raise NotConfigured(f"PORTO_OBSERVER_ID must name another actor than PORTO_WORKER_ID "
                                f"({self.worker_id}): the signer of a payment never records what the chain did "
                                "with it")

    def require_observer(self) -> tuple[str, str]:
        """The observer's actor and token: a payment worker records chain observations under a second credential;
        without one it does not start."""
        if not (self.observer_id and self.observer_token):
            raise NotConfigured(
                "a payment worker needs a second credential for its chain observations: set PORTO_OBSERVER_ID and "
                "PORTO_OBSERVER_TOKEN or PORTO_OBSERVER_TOKEN_FILE (an actor holding dispatcher and observer, "
                "other than PORTO_WORKER_ID: the ledger refuses a signer's observation of its own payment)")
        return self.observer_id, self.observer_token

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "EffectsConfig":
        """From ``env``, or this process's environment; its secrets are read here, in the worker that needs them."""
        return cls.from_environment(read_environment(env))

    @classmethod
    def from_environment(cls, environment: Environment) -> "EffectsConfig":
        return cls(
            chain=environment.chain, chain_url=environment.chain_url, chain_id=environment.chain_id,
            usdc_metadata=environment.usdc_metadata,
            signer_key=environment.signer_key.value(), committer_key=environment.committer_key.value(),
            transaction_ttl_secs=environment.transaction_ttl_secs, max_gas_amount=environment.max_gas_amount,
            gas_unit_price=environment.gas_unit_price,
            payment_journal=environment.payment_journal, commitment_journal=environment.commitment_journal,
            signer_journal_url=environment.signer_journal_url.value(),
            internal_api_url=environment.internal_api_url,
            worker_id=environment.worker_id, worker_token=environment.worker_token.value(),
            observer_id=environment.observer_id, observer_token=environment.observer_token.value(),
            claim_ttl_ms=environment.claim_ttl_ms, quarantine_dir=environment.quarantine_dir,
            observe_window_secs=environment.observe_window_secs, payer_window=environment.payer_window,
        )
