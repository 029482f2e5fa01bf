"""Money commands: budgets, allocation, payout runs, payments, effects, batches, corrections."""

from ledger_engine.domain.commands.money import allocation, budgets, corrections  # noqa: F401
from ledger_engine.domain.commands.money import leases, payout_runs, recipient_updates  # noqa: F401
