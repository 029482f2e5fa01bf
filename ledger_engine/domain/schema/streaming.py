"""Periods, works, nodes, sessions, listener-days, grants, receipts, decisions, holds and peer fills.

Each record is the ``TypedDict`` of what its rules store (docs/records/streaming.md); amounts are canonical
decimal strings, as stored, and ``parse_amount`` gives their integer. State records are ``state/<name>/...``;
uniqueness sentinels are ``unique/<name>/...``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal, TypedDict

from ledger_engine.keys import key, seq20
from ledger_engine.open_json import RecordData


Disposition = Literal["accepted", "partial", "held", "late", "rejected"]
BillingKind = Literal["period_opened", "payment_cleared", "entitlement_cancelled", "payment_refunded"]
WorkStatus = Literal["imported", "active", "withdrawn"]
WithdrawalReason = Literal["licence_expired", "rights_dispute", "takedown_notice", "content_defect"]
NodeStatus = Literal["pending", "active", "suspended", "retired"]
NodeStatusReason = Literal[
    "readiness_passed", "health_failure", "policy_violation", "key_compromise", "operator_request", "decommissioned",
]
KeyEnd = Literal["scheduled", "compromised"]
HealthStatus = Literal["healthy", "degraded", "unreachable"]


class BillingEntry(TypedDict):
    """One provider event a period has taken, in admission order."""

    event_id: str
    kind: BillingKind
    occurred_at_ms: int
    admitted_at_ms: int
    evidence_digest: str


class Period(TypedDict):
    period_id: str
    account_id: str
    provider: str
    provider_period_id: str
    start_ms: int
    end_ms: int
    days: int
    entitlement: Literal["active", "cancelled"]
    clearance: Literal["pending", "cleared", "refunded"]
    gross_gbp: str
    net_gbp: str
    opened_at_ms: int
    events: list[BillingEntry]


class Withdrawal(TypedDict):
    reason: WithdrawalReason
    at_ms: int
    evidence_digest: str


class WithdrawalHistory(TypedDict, total=False):
    """What a work keeps from its first ``DisableWork`` on, also once it is active again.

    A ``total=False`` base rather than ``NotRequired``: under postponed annotations Python 3.11 counts a
    ``NotRequired`` key among ``__required_keys__``.
    """

    last_withdrawal: Withdrawal


class WorkTitle(TypedDict, total=False):
    """A work's display title, which its import gave it or not: absent from every work imported without one, so
    their records keep the bytes they had before titles (``display_title`` in commands/catalogue.py)."""

    title: str


class Work(WithdrawalHistory, WorkTitle):
    work_id: str
    status: WorkStatus
    metadata_hash: str
    licence_ref: str
    rendition_ids: list[str]
    rights_version: int
    import_id: str


class RenditionChunk(TypedDict):
    index: int
    start_ms: int
    end_ms: int
    size_bytes: int
    sha256: str


class Rendition(TypedDict):
    work_id: str
    rendition_id: str
    codec: str
    duration_ms: int
    manifest_hash: str
    chunks: list[RenditionChunk]


class RightsShare(TypedDict):
    recipient_id: str
    split_bps: int


class RightsVersion(TypedDict):
    work_id: str
    version: int
    effective_at_ms: int
    licence_ref: str
    recipients: list[RightsShare]


class KeyVersion(TypedDict):
    version: int
    public_key: str
    valid_from_ms: int
    valid_until_ms: int | None
    ended_by: KeyEnd | None


class IndependenceDeclaration(TypedDict):
    declaration_digest: str
    affiliated_account_ids: list[str]


class ReadinessChecks(TypedDict):
    endpoint_verified: bool
    inventory_verified: bool
    independence_reviewed: bool
    evidence_digest: str


class Node(TypedDict):
    node_id: str
    operator_id: str
    status: NodeStatus
    endpoint: str
    region: str
    key_versions: list[KeyVersion]
    independence: IndependenceDeclaration
    admitted_at_ms: int
    status_changed_at_ms: int
    status_reason: NodeStatusReason | None
    readiness: ReadinessChecks | None
    evidence_digest: str


class NodeHealth(TypedDict):
    node_id: str
    report_id: str
    status: HealthStatus
    observed_at_ms: int
    recorded_at_ms: int
    inventory: list[str]


class Session(TypedDict):
    session_id: str
    account_id: str
    period_id: str
    work_id: str
    rendition_id: str
    rights_version: int
    day: int
    status: Literal["open", "closed"]
    opened_at_ms: int
    lease_ms: int
    expires_at_ms: int
    updated_at_ms: int
    closed_at_ms: int | None
    close_reason: str | None
    grant_count: int
    receipt_ids: list[str]
    receipted_media_ms: int


class SessionWindow(TypedDict):
    session_id: str
    opened_at_ms: int
    closed_at_ms: int | None


class ListenerActivity(TypedDict):
    listener_id: str
    day: int
    sessions: list[SessionWindow]


class ListenedWork(TypedDict):
    work_id: str
    rights_version: int
    listened_ms: int


class ServedBytes(TypedDict):
    node_id: str
    operator_id: str
    served_bytes: int


class SessionSummary(TypedDict):
    session_id: str
    work_id: str
    listened_ms: int
    eligible: bool


class ListenerDay(TypedDict):
    listener_id: str
    day: int
    period_id: str
    status: Literal["closed"]
    works: list[ListenedWork]
    nodes: list[ServedBytes]
    sessions: list[SessionSummary]
    eligible_ms: int
    closed_at_ms: int
    activity_revision: int | None
    hold_free: Literal[True]


class GrantConsumption(TypedDict):
    request_id: str
    at_ms: int
    sequence: int


class Grant(TypedDict):
    grant_id: str
    purpose: Literal["playback", "peer_fill"]
    session_id: str | None
    destination_node_id: str | None
    node_id: str
    rendition_id: str
    chunk_index: int
    nonce_hash: str
    issued_at_ms: int
    expires_at_ms: int
    coordinator_id: str
    coordinator_sequence: int
    state: Literal["issued", "consumed"]
    consumed: GrantConsumption | None
    receipt_id: str | None


class Receipt(TypedDict):
    receipt_id: str
    grant_id: str
    session_id: str
    node_id: str
    key_version: int
    rendition_id: str
    chunk_index: int
    bytes_served: int
    served_at_ms: int
    body_hash: str
    evidence_digest: str
    listener_id: str
    day: int
    partial: bool
    media_ms: int
    recorded_at_ms: int
    recorded_sequence: int
    hold_id: str | None


class Decision(TypedDict):
    receipt_id: str
    session_id: str
    revision: int
    predecessor: str | None
    disposition: Disposition
    hold_reasons: list[str]
    decision: str | None
    decision_reason: str | None
    actor_id: str
    decided_at_ms: int
    sequence: int


class Hold(TypedDict):
    hold_id: str
    target_kind: Literal["receipt"]
    receipt_id: str
    session_id: str
    listener_id: str
    day: int
    node_id: str
    reasons: list[str]
    status: Literal["open", "released", "rejected"]
    raised_at_ms: int
    raised_sequence: int
    decision_revision: int
    decision: RecordData | None


class PeerFill(TypedDict):
    result_id: str
    grant_id: str
    source_node_id: str
    destination_node_id: str
    key_version: int
    rendition_id: str
    chunk_index: int
    outcome: Literal["verified", "hash_mismatch", "incomplete"]
    bytes_received: int
    observed_at_ms: int
    body_hash: str
    evidence_digest: str
    recorded_at_ms: int
    recorded_sequence: int


# Billing.
def period_key(period_id: str) -> str:
    return key("period", period_id)


def provider_period_sentinel(provider: str, provider_period_id: str) -> str:
    return key("billing_period", provider, provider_period_id)


def billing_event_sentinel(provider: str, event_id: str) -> str:
    return key("billing_event", provider, event_id)


def account_periods_prefix(account_id: str) -> str:
    return key("account_period", account_id) + "/"


def account_period_sentinel(account_id: str, start_ms: int) -> str:
    return key("account_period", account_id, seq20(start_ms))


# Works, renditions and rights versions (written by the catalogue commands).
def work_key(work_id: str) -> str:
    return key("work", work_id)


def rendition_key(rendition_id: str) -> str:
    return key("rendition", rendition_id)


@lru_cache(maxsize=1 << 14, typed=True)  # every work of every listener-day names one: a city's split asks a million times
def rights_key(work_id: str, version: int) -> str:
    return key("rights", work_id, seq20(version))


# Nodes.
def node_key(node_id: str) -> str:
    return key("node", node_id)


def node_health_key(node_id: str) -> str:
    return key("node_health", node_id)


def endpoint_sentinel(host_and_port: str) -> str:
    return key("node_endpoint", host_and_port)


def node_public_key_sentinel(public_key: str) -> str:
    return key("node_public_key", public_key)


# Sessions and listener-days.
def session_key(session_id: str) -> str:
    return key("session", session_id)


def active_session_sentinel(account_id: str) -> str:
    return key("active_session", account_id)


def listener_activity_key(listener_id: str, day: int) -> str:
    return key("listener_activity", listener_id, seq20(day))


def listener_day_key(listener_id: str, day: int) -> str:
    return key("listener_day", listener_id, seq20(day))


# Grants.
def grant_key(grant_id: str) -> str:
    return key("grant", grant_id)


def nonce_sentinel(nonce_hash: str) -> str:
    return key("grant_nonce", nonce_hash)


def coordinator_key(coordinator_id: str) -> str:
    return key("coordinator", coordinator_id)


# Receipts, peer fills, decisions and holds.
def receipt_key(receipt_id: str) -> str:
    return key("receipt", receipt_id)


def peer_fill_key(result_id: str) -> str:
    return key("peer_fill", result_id)


def decision_key(receipt_id: str, revision: int) -> str:
    return key("decision", receipt_id, seq20(revision))


def hold_key(hold_id: str) -> str:
    return key("hold", hold_id)
