"""Recipients' statement files (docs/merkle.md), read at a command boundary for the console and the worker API.

A file exists once the statement's index, frozen with a statement tree, is
confirmed on chain: the statement, its inclusion proof, the batch root, the
checkpoint of that root signed with the deployment's checkpoint key
(``PORTO_CHECKPOINT_KEY``) and the anchoring transaction, rebuilt from the
index artifact in the evidence store. Beside it, one parts file per day line
of the statement: the listener-days the day line is made of, recomputed from
the chunk's stored bytes and held to what the signed statement commits to, so
the recipient can check both on ``/verify/``.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from ledger_engine.errors import LedgerError
from ledger_engine.merkle.checkpoint import CheckpointSigner, VerifierKey
from ledger_engine.merkle.document import encode_document
from ledger_engine.merkle.parts_file import statement_day_lines
from ledger_engine.merkle.statement import sign_statement_file, statement_file_bytes
from ledger_engine.open_json import Document
from ledger_engine.selectors.statement_index import parts_file, statement_file
from porto_console.environment import read_environment
from porto_console.ledger import LedgerRead, gateway, read_view


def chain_label() -> str:
    """How a statement file names the chain its root is anchored on (``PORTO_CHAIN``, ``PORTO_CHAIN_ID``)."""
    environment = read_environment()
    return f"{environment.chain} chain {environment.chain_id}"


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
    document = read_view(lambda view: statement_file(view, evidence.get, statement_id, chain_label())).data
    signed = sign_statement_file(document, checkpoint_signer())
    return f"statement-{signed['statement']['public_proof_id']}.json", statement_file_bytes(signed)


def statement_read(statement_id: str) -> LedgerRead[Document]:
    """The statement its file holds (its lines, day lines with their commitments) and the head it was read at;
    LedgerError as for the file."""
    evidence = gateway().evidence
    return read_view(lambda view: statement_file(view, evidence.get, statement_id, chain_label())["statement"])


def day_lines_of(statement: Document) -> list[Document]:
    """The statement's day lines, each with its chunk and its commitment to its parts, in statement order."""
    return list(statement_day_lines(statement).values())


def parts_file_for(statement_id: str, line_id: str) -> tuple[str, bytes]:
    """The parts file of one day line of the statement: its name and bytes; LedgerError (NOT_FOUND,
    INVALID_STATE, CONFLICTING_EVIDENCE) when there is none to hand out."""
    evidence = gateway().evidence
    document = read_view(lambda view: parts_file(view, evidence.get, statement_id, line_id)).data
    return f"day-line-parts-{line_id}.json", encode_document(document)
