"""Typed records and their keys, one module per domain, mirroring docs/records/ (docs/adr/0045).

A record's ``data`` is JSON: these are ``TypedDict``s, so a rule, an
invariant or a selector names the fields it reads and a type checker holds it
to them, at no cost at run time. Each module also owns its records' key
functions and key prefixes; it imports only the shared encodings
(``ledger_engine.keys``), so every rule, invariant and projection can import
it without a cycle.
"""
