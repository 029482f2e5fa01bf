"""Where the streaming records live: the key functions, defined beside the record types in
``ledger_engine.domain.schema.streaming`` (docs/adr/0045) and named here for the rules that import them.
"""

from __future__ import annotations

from ledger_engine.domain.schema.streaming import (  # noqa: F401
    period_key, provider_period_sentinel, billing_event_sentinel, account_periods_prefix, account_period_sentinel,
    node_key, node_health_key, endpoint_sentinel, node_public_key_sentinel, session_key, active_session_sentinel,
    listener_activity_key, listener_day_key, grant_key, nonce_sentinel, coordinator_key, receipt_key,
    peer_fill_key, decision_key, hold_key,
)
