"""Merkle trees (RFC 9162) over the journal and over each batch's statements, and their proofs.

- ``tree``: leaf and node hashes, roots, inclusion and consistency proofs from a
  ``NodeReader``, and the RFC 9162 verification algorithms. hashlib only.
- ``frontier``: ``Frontier`` (the compact, persistable state of a growing tree,
  appended in O(log n)), ``BlockFrontier`` (the same, reporting only the nodes
  from a block level up) and ``MemoryNodes`` (every node of a tree in memory).
- ``journal``: the journal tree's leaves (entry hashes), ``JournalFrontier`` and
  its proof documents.
- ``statement``: statement leaves, ``StatementTree`` and the recipient's statement file.
- ``day_line_parts``: a day line's parts (the listener-days of its frozen chunk, by position) and their digest;
  ``parts_file``: the recipient's check of a parts file against the day line its statement commits to.
- ``checkpoint``: a statement tree's root and size as a C2SP signed note, signed and verified.
- ``document``: the strict canonical-JSON reading and the stable ``Reason`` codes.

docs/merkle.md describes the formats, with test vectors.
"""

from ledger_engine.merkle.document import ProofRejected, Reason
from ledger_engine.merkle.journal import prove_consistency, prove_inclusion, verify_proof_document
from ledger_engine.merkle.statement import StatementTree, check_statement_file, verify_statement_file

__all__ = ["ProofRejected", "Reason", "StatementTree", "check_statement_file", "prove_consistency",
           "prove_inclusion", "verify_proof_document", "verify_statement_file"]
