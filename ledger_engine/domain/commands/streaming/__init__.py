"""Streaming evidence commands: billing, catalogue withdrawal, nodes, sessions, grants, receipts, holds, days."""

from ledger_engine.domain.commands.streaming import (  # noqa: F401  (each module registers its commands)
    billing, days, grants, holds, nodes, peer_fills, receipts, sessions, works,
)
