"""Selectors: the ledger read for screens, workers and exports.

Each takes a ``LedgerView`` (``view.py``), the ledger as of one command boundary, and returns typed records; none
sees the store, the owner or anything that writes. They read state, the outbox, the journal and the indexes the
projections (``projections/``) keep.
"""
