"""Every command module; importing this package registers them all."""

from ledger_engine.domain.commands import accounts, audit, catalogue, funding, money, streaming  # noqa: F401
