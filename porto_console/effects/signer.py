"""Signing keys, from configuration only: the ledger never holds or sees them.

The payer (``PORTO_SIGNER_KEY``) signs transfers; the committer
(``PORTO_COMMITTER_KEY``), a separate account, signs batch commitments.
"""

from __future__ import annotations

from aptos_sdk.account_address import AccountAddress
from aptos_sdk.ed25519 import PrivateKey

from porto_console.effects.config import EffectsConfig, NotConfigured
from porto_console.effects.transactions import SignedTransfer, TermsT, address_text, sign_transfer


class Signer:
    def __init__(self, key: PrivateKey) -> None:
        self._key = key
        self.address = address_text(AccountAddress.from_key(key.public_key()))

    @classmethod
    def from_config(cls, config: EffectsConfig) -> "Signer":
        """The payer."""
        return cls._from_secret(config.signer_key, "PORTO_SIGNER_KEY")

    @classmethod
    def committer(cls, config: EffectsConfig) -> "Signer":
        return cls._from_secret(config.committer_key, "PORTO_COMMITTER_KEY")

    @classmethod
    def _from_secret(cls, secret: str | None, setting: str) -> "Signer":
        if not secret:
            raise NotConfigured(f"no signing key: set {setting} or {setting}_FILE")
        try:
            return cls(PrivateKey.from_str(secret, strict=False))
        except Exception as error:
            raise NotConfigured(f"{setting} is not an Ed25519 private key: {type(error).__name__}") from None

    def sign(self, terms: TermsT) -> SignedTransfer[TermsT]:
        return sign_transfer(self._key, terms)

    def __repr__(self) -> str:
        return f"Signer({self.address})"
