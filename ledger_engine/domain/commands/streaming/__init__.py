"""Streaming evidence commands: billing, catalogue withdrawal, nodes, sessions, grants, receipts, holds, days."""
