"""Money commands: budgets, allocation, payout runs, payments, effects, batches, corrections."""
