"""Signed checkpoints: a statement tree's origin, size and root as a C2SP signed note.

The note is the ``tlog-checkpoint`` body (origin line, decimal tree size,
base64 root hash, each ending in a newline), a blank line, then one
signature line per signer (``signed-note``)::

    — <key name> <base64(key hash || Ed25519 signature of the body)>

with the key hash the first four bytes of SHA-256(key name || 0x0A || 0x01 ||
public key). A verifier pins the public half as a verifier key,
``<key name>+<key hash hex>+<base64(0x01 || public key)>``, the form Go's
``sumdb/note`` reads, so any C2SP tool checks Porto's checkpoints.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.merkle.document import Reason, reject

ED25519 = 0x01
SIGNATURE_PREFIX = "\u2014 "
MAX_NOTE_CHARS = 4096
MAX_SIGNATURES = 16
KEY_NAME = re.compile(r"[!-*,-~]{1,200}")  # printable ASCII without space or "+": the signed-note name rule
SIZE = re.compile(r"0|[1-9][0-9]{0,15}")
# The labelled demo's checkpoint key: public (it is in this repository), so a deployment must never use it.
DEMO_CHECKPOINT_SEED_HEX = hashlib.sha256(b"porto:london:DEMO-ONLY-checkpoint-key:v1").hexdigest()


@dataclass(frozen=True)
class Checkpoint:
    """What a note vouches for: the tree of ``size`` leaves under ``origin`` has root ``root``."""

    origin: str
    size: int
    root: bytes

    def body(self) -> str:
        return f"{self.origin}\n{self.size}\n{base64.b64encode(self.root).decode()}\n"


@dataclass(frozen=True)
class VerifierKey:
    """The public half a verifier pins: the key name and the Ed25519 public key."""

    name: str
    public_key: bytes

    @property
    def key_hash(self) -> bytes:
        return hashlib.sha256(self.name.encode() + b"\n" + bytes([ED25519]) + self.public_key).digest()[:4]

    def encoded(self) -> str:
        return f"{self.name}+{self.key_hash.hex()}+{base64.b64encode(bytes([ED25519]) + self.public_key).decode()}"

    @classmethod
    def parse(cls, text: str) -> "VerifierKey":
        """A verifier key as published; a malformed one is MALFORMED_ENVELOPE."""
        name, _, rest = text.strip().partition("+")
        key_hash, _, encoded = rest.partition("+")
        try:
            raw = base64.b64decode(encoded, validate=True)
        except binascii.Error:
            raw = b""
        if not KEY_NAME.fullmatch(name) or len(raw) != 33 or raw[0] != ED25519:
            raise LedgerError(ErrorCode.MALFORMED_ENVELOPE, "a verifier key is <name>+<8 hex digits>+<base64 of 0x01 "
                                                            "and a 32-byte Ed25519 public key>")
        key = cls(name, raw[1:])
        if key_hash != key.key_hash.hex():
            raise LedgerError(ErrorCode.MALFORMED_ENVELOPE, "the verifier key's hash does not match its name and key")
        return key


@dataclass(frozen=True)
class CheckpointSigner:
    """The ledger's side: signs checkpoints under ``name`` with a key from a 32-byte seed."""

    name: str
    private_key: Ed25519PrivateKey

    @classmethod
    def from_seed_hex(cls, name: str, seed_hex: str) -> "CheckpointSigner":
        if not KEY_NAME.fullmatch(name):
            raise LedgerError(ErrorCode.MALFORMED_ENVELOPE, "a checkpoint key name is 1 to 200 printable ASCII "
                                                            "characters without spaces or '+'")
        if not re.fullmatch(r"[0-9a-fA-F]{64}", seed_hex or ""):
            raise LedgerError(ErrorCode.MALFORMED_ENVELOPE, "a checkpoint key is a 32-byte seed in 64 hex digits")
        return cls(name, Ed25519PrivateKey.from_private_bytes(bytes.fromhex(seed_hex)))

    @property
    def verifier_key(self) -> VerifierKey:
        return VerifierKey(self.name, self.private_key.public_key().public_bytes_raw())

    def sign(self, checkpoint: Checkpoint) -> str:
        """The signed note: the body, a blank line, and this key's signature line."""
        body = checkpoint.body()
        signature = self.verifier_key.key_hash + self.private_key.sign(body.encode())
        return f"{body}\n{SIGNATURE_PREFIX}{self.name} {base64.b64encode(signature).decode()}\n"


@dataclass(frozen=True)
class SignatureLine:
    name: str
    key_hash: bytes
    signature: bytes


def parse_note(note: object, field: str = "checkpoint") -> tuple[Checkpoint, list[SignatureLine]]:
    """The checkpoint and signature lines of a note, or MALFORMED at ``field``; no signature is checked here."""
    if type(note) is not str or len(note) > MAX_NOTE_CHARS or not note.endswith("\n"):
        reject(Reason.MALFORMED, field, f"a checkpoint is a signed note of at most {MAX_NOTE_CHARS} characters, "
                                        "ending in a newline")
    body, separator, signatures = note.rpartition("\n\n")
    if not separator or not body:
        reject(Reason.MALFORMED, field, "a signed note is its text, a blank line, then its signature lines")
    lines = body.split("\n")
    if len(lines) < 3 or not all(lines) or "\r" in body:
        reject(Reason.MALFORMED, field, "a checkpoint's text is its origin, tree size and root hash, one a line")
    if not SIZE.fullmatch(lines[1]):
        reject(Reason.MALFORMED, field, "a checkpoint's tree size is a decimal number without leading zeros")
    root = _base64(lines[2], 32, field, "a checkpoint's root hash is 32 bytes in base64")
    return Checkpoint(lines[0], int(lines[1]), root), _signature_lines(signatures[:-1].split("\n"), field)


def _signature_lines(lines: list[str], field: str) -> list[SignatureLine]:
    if not 1 <= len(lines) <= MAX_SIGNATURES:
        reject(Reason.MALFORMED, field, f"a signed note has 1 to {MAX_SIGNATURES} signature lines")
    parsed = []
    for line in lines:
        name, _, encoded = line.removeprefix(SIGNATURE_PREFIX).partition(" ")
        if not line.startswith(SIGNATURE_PREFIX) or not KEY_NAME.fullmatch(name):
            reject(Reason.MALFORMED, field, "a signature line is an em dash, a space, the key name, a space and "
                                            "the signature in base64")
        raw = _base64(encoded, None, field, "a signature is its key hash and the signature in base64")
        if len(raw) < 5:
            reject(Reason.MALFORMED, field, "a signature is a 4-byte key hash and the signature")
        parsed.append(SignatureLine(name, raw[:4], raw[4:]))
    return parsed


def _base64(text: str, length: int | None, field: str, detail: str) -> bytes:
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error:
        reject(Reason.MALFORMED, field, detail)
    if (length is not None and len(raw) != length) or base64.b64encode(raw).decode() != text:
        reject(Reason.MALFORMED, field, detail)
    return raw


def verify_note(note: str, key: VerifierKey, field: str = "checkpoint") -> Checkpoint:
    """The checkpoint, if the note carries a valid signature by ``key``; else UNKNOWN_KEY or SIGNATURE_INVALID.

    As in signed-note, the first line with the key's name and hash decides: a bad signature there is not
    excused by another line.
    """
    checkpoint, signatures = parse_note(note, field)
    ours = next((line for line in signatures if (line.name, line.key_hash) == (key.name, key.key_hash)), None)
    if ours is None:
        names = ", ".join(sorted({f"{line.name} ({line.key_hash.hex()})" for line in signatures}))
        reject(Reason.UNKNOWN_KEY, field, f"the checkpoint is signed by {names}, not by the pinned key "
                                          f"{key.name} ({key.key_hash.hex()})")
    try:
        Ed25519PublicKey.from_public_bytes(key.public_key).verify(ours.signature, note.rpartition("\n\n")[0].encode()
                                                                  + b"\n")
    except (InvalidSignature, ValueError):
        reject(Reason.SIGNATURE_INVALID, field, f"the signature by {key.name} does not match the checkpoint")
    return checkpoint
