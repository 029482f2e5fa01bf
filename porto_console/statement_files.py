"""Recipients' statement files (docs/merkle.md), read at a command boundary for the console and the worker API.

A file exists once the statement's index, frozen with a statement tree, is
confirmed on chain: the statement, its inclusion proof, the batch root, the
checkpoint of that root signed with the deployment's checkpoint key
(``PORTO_CHECKPOINT_KEY``) and the anchoring transaction, rebuilt from the
index artifact in the evidence store.
"""

from __future__ import annotations

import os

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from ledger_engine.errors import LedgerError
from ledger_engine.merkle.checkpoint import CheckpointSigner, VerifierKey
from ledger_engine.merkle.statement import sign_statement_file, statement_file_bytes
from ledger_engine.projections.statement_index import statement_file
from porto_console.ledger import gateway, owner


def chain_label() -> str:
    """How a statement file names the chain its root is anchored on (``PORTO_CHAIN``, ``PORTO_CHAIN_ID``)."""
    return f"{os.environ.get('PORTO_CHAIN', 'simulated')} chain {os.environ.get('PORTO_CHAIN_ID', '4')}"


def checkpoint_signer() -> CheckpointSigner:
    """The deployment's checkpoint key under its origin; ImproperlyConfigured when it is missing or malformed."""
    if not settings.CHECKPOINT_KEY:
        raise ImproperlyConfigured("PORTO_CHECKPOINT_KEY is not set: statement checkpoints could not be signed")
    try:
        return CheckpointSigner.from_seed_hex(settings.CHECKPOINT_ORIGIN, settings.CHECKPOINT_KEY)
    except LedgerError as error:
        raise ImproperlyConfigured(f"PORTO_CHECKPOINT_KEY or PORTO_CHECKPOINT_ORIGIN: {error.detail}") from None


def pinned_verifier_key() -> VerifierKey | None:
    """The public half the verifier page pins, or None when this console has no checkpoint key."""
    return checkpoint_signer().verifier_key if settings.CHECKPOINT_KEY else None


def statement_file_for(statement_id: str) -> tuple[str, bytes]:
    """The file's name and bytes; LedgerError (NOT_FOUND, INVALID_STATE) when the statement has none yet."""
    evidence = gateway().evidence
    document = owner().read(lambda view: statement_file(view, evidence.get, statement_id, chain_label()))
    signed = sign_statement_file(document, checkpoint_signer())
    return f"statement-{signed['statement']['public_proof_id']}.json", statement_file_bytes(signed)
