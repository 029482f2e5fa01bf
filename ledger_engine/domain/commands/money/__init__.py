"""Money commands: budgets, allocation, day allocation requests, frozen day chunks, payout runs, payments,
effects, batches, corrections."""

from ledger_engine.domain.commands.money import allocate_day, allocation, budgets, corrections, freeze  # noqa: F401
from ledger_engine.domain.commands.money import leases, payout_runs, recipient_updates  # noqa: F401
