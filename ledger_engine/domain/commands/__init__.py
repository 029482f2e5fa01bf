"""Every command module; importing this package registers them all."""

from ledger_engine.domain.commands import (  # noqa: F401
    accounts, audit, catalogue, dispatch_switch, funding, money, profile_changes, staff_changes, streaming,
)
