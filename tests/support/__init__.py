"""Reusable test support: the ``porto-ledger`` driver, store inspection, seed-000 hashes, payloads."""
