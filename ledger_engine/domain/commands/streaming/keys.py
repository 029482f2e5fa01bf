"""Where the streaming records live. docs/records/streaming.md describes each shape.

State records are ``state/<name>/...``; uniqueness sentinels are ``unique/<name>/...``.
"""

from __future__ import annotations

from ledger_engine.keys import key, seq20


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
