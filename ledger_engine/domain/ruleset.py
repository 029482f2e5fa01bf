"""Supported rulesets and the genesis parameters they pin.

A ruleset version names a fixed set of rules and parameters. An envelope that
names any other version is refused before admission: unknown rules fail closed.
"""

from __future__ import annotations

from typing import Literal, TypedDict, get_args

from ledger_engine.errors import ErrorCode, LedgerError

RULESET_VERSION = "london-1"
SUPPORTED_RULESETS = frozenset({RULESET_VERSION})

# Roles a console user or worker can hold; the ledger checks them itself.
Role = Literal[
    "admin",  # provisions accounts and roles
    "finance",  # prepares, approves and cancels payout runs; approves recipient updates
    "ops",  # reviews holds, changes node status
    "auditor",  # reads and exports
    "ingest",  # trusted adapters: billing, catalogue, funding, node and receipt evidence
    "coordinator",  # sessions and grants
    "signer",  # records signed payment attempts
    "observer",  # records chain observations
    "dispatcher",  # claims and completes effects
    "committer",  # anchors artifact batches
    "maintenance",  # backups and checkpoints
]
ROLES = frozenset(get_args(Role))
# The role of the ledger's own actor (``actors.LEDGER_OWNER``), known to the rules without an account: not a
# ``Role``, so no account, genesis actor or worker credential can hold it. The owner process submits the commands
# that need it, in process; the gateway and the internal API refuse them, and that actor, from anyone (docs/adr/0073).
OWNER_ROLE = "ledger-owner"

ASSETS = {"USDC": 6, "GBP": 2}

# docs/spec/allocation-policy.md: the london-1 allocation policy, fixed in genesis.
class AllocationPolicyTerms(TypedDict):
    """The allocation policy a ruleset's genesis records: the pools' basis points and how splits round."""

    operator_pool_bps: int
    porto_retained_bps: int
    split_rounding: str


LONDON_1_POLICY: AllocationPolicyTerms = {
    "operator_pool_bps": 1500,
    "porto_retained_bps": 1000,
    "split_rounding": "largest-remainder-canonical-id",
}


def require_supported(version: str) -> None:
    if version not in SUPPORTED_RULESETS:
        raise LedgerError(ErrorCode.UNSUPPORTED_RULESET, f"ruleset {version!r} is not supported")
