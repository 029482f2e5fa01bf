"""Recipients' statement files (docs/merkle.md), read at a command boundary for the console and the worker API.

A file exists once the statement's index, frozen with a statement tree, is
confirmed on chain: the statement, its inclusion proof, the batch root and the
anchoring transaction, rebuilt from the index artifact in the evidence store.
"""

from __future__ import annotations

import os

from ledger_engine.merkle.statement import statement_file_bytes
from ledger_engine.projections.statement_index import statement_file
from porto_console.ledger import gateway, owner


def chain_label() -> str:
    """How a statement file names the chain its root is anchored on (``PORTO_CHAIN``, ``PORTO_CHAIN_ID``)."""
    return f"{os.environ.get('PORTO_CHAIN', 'simulated')} chain {os.environ.get('PORTO_CHAIN_ID', '4')}"


def statement_file_for(statement_id: str) -> tuple[str, bytes]:
    """The file's name and bytes; LedgerError (NOT_FOUND, INVALID_STATE) when the statement has none yet."""
    evidence = gateway().evidence
    document = owner().read(lambda view: statement_file(view, evidence.get, statement_id, chain_label()))
    return f"statement-{document['statement']['public_proof_id']}.json", statement_file_bytes(document)
