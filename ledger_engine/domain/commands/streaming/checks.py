"""Checks the streaming rules share: references, stated revisions, evidence and time."""

from __future__ import annotations

from ledger_engine.canonical import domain_hash
from ledger_engine.domain.changes import Rejected, require, require_present
from ledger_engine.domain.registry import Payload, RuleContext
from ledger_engine.domain.schema.staff import Account, account_key
from ledger_engine.domain.view import Shape
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE

EVIDENCE_BODY_DOMAIN = "porto:london:evidence-body:v1\n"


def existing(ctx: RuleContext, record_key: str, what: str, shape: type[Shape]) -> Shape:
    """The current state record at ``record_key``, of record type ``shape``, or a ``NOT_FOUND`` rejection."""
    record = require_present(ctx.changes.get(STATE, record_key), ErrorCode.NOT_FOUND, f"{what} does not exist")
    return record.data_as(shape)


def require_account(ctx: RuleContext, account_id: str, kind: str, *, active: bool = True) -> Account:
    """An account of ``kind`` (and active, unless told otherwise), or an ``INVALID_REFERENCE`` rejection."""
    account = existing(ctx, account_key(account_id), f"account {account_id}", Account)
    require(account["kind"] == kind and (account["status"] == "active" or not active), ErrorCode.INVALID_REFERENCE,
            f"account {account_id} is not {'an active' if active else 'a'} {kind} account")
    return account


def require_absent(ctx: RuleContext, record_key: str, what: str) -> None:
    require(ctx.changes.get(STATE, record_key) is None, ErrorCode.ALREADY_EXISTS, f"{what} already exists")


def require_stated_revision(ctx: RuleContext, record_key: str, what: str) -> None:
    """Deliberate decisions name the exact revision they were taken on (null when absent)."""
    require(ctx.states_revision_of(STATE, record_key), ErrorCode.STALE_REVISION,
            f"{what} needs the expected revision of state/{record_key}")


def require_evidence(ctx: RuleContext, digest: str) -> None:
    require(digest in ctx.envelope.evidence_hashes, ErrorCode.INVALID_REFERENCE,
            f"evidence {digest} must be listed in the envelope's evidence_hashes")


def require_not_before(ctx: RuleContext, last_ms: int, what: str) -> None:
    """Leases and expiries move with admission time, which must not run backwards for a record."""
    require(ctx.now_ms >= last_ms, ErrorCode.INVALID_TIME,
            f"admission time {ctx.now_ms} is before the last change to {what} at {last_ms}")


def new_evidence_hash(ctx: RuleContext, record_key: str, body: Payload, evidence_digest: str, what: str) -> str:
    """The hash of a normalised evidence body that is recorded once at ``record_key``.

    The signed bytes must be listed in the envelope. Evidence is final: the same
    body again is a duplicate, another body under the same ID a conflict.
    """
    require_evidence(ctx, evidence_digest)
    new_hash = domain_hash(EVIDENCE_BODY_DOMAIN, body.model_dump(mode="json"))
    previous = ctx.changes.get(STATE, record_key)
    if previous is not None:
        same = previous.data["body_hash"] == new_hash
        raise Rejected(ErrorCode.DUPLICATE_EVIDENCE if same else ErrorCode.CONFLICTING_EVIDENCE,
                       f"{what} was already recorded with {'this' if same else 'another'} body")
    return new_hash
