"""The payer's signing key, from configuration only: the ledger never holds or sees it."""

from __future__ import annotations

from aptos_sdk.account_address import AccountAddress
from aptos_sdk.ed25519 import PrivateKey

from porto_console.effects.config import EffectsConfig, NotConfigured
from porto_console.effects.transactions import SignedTransfer, TransferTerms, address_text, sign_transfer


class Signer:
    def __init__(self, key: PrivateKey) -> None:
        self._key = key
        self.address = address_text(AccountAddress.from_key(key.public_key()))

    @classmethod
    def from_config(cls, config: EffectsConfig) -> "Signer":
        if not config.signer_key:
            raise NotConfigured("no signing key: set PORTO_SIGNER_KEY or PORTO_SIGNER_KEY_FILE")
        try:
            return cls(PrivateKey.from_str(config.signer_key, strict=False))
        except Exception as error:
            raise NotConfigured(f"the signing key is not an Ed25519 private key: {type(error).__name__}") from None

    def sign(self, terms: TransferTerms) -> SignedTransfer:
        return sign_transfer(self._key, terms)

    def __repr__(self) -> str:
        return f"Signer({self.address})"
