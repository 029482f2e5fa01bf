"""The chart of accounts: posting account names, per asset.

Every USDC movement is one balanced journal between these accounts; GBP
revenue has its own accounts and never shares a journal with USDC.

USDC flow, each step a balanced journal:

    ImportFunding          Dr treasury                      Cr funding_available
    budget funded          Dr funding_available             Cr budget_unallocated:<budget>
    AllocateListenerDay    Dr budget_unallocated:<budget>   Cr artist_payable:<recipient>
                                                            Cr operator_payable:<recipient>
                                                            Cr porto_retained
    ApprovePayoutRun       Dr <role>_payable:<recipient>    Cr reserved_payouts:<recipient>
    CancelPayoutRun        Dr reserved_payouts:<recipient>  Cr <role>_payable:<recipient>
    transfer confirmed     Dr reserved_payouts:<recipient>  Cr treasury   (and paid:<recipient> memo)
    period refunded        Dr budget_unallocated:<budget>   Cr subscription_refunds
"""

from __future__ import annotations

TREASURY = "treasury"
FUNDING_AVAILABLE = "funding_available"
PORTO_RETAINED = "porto_retained"
CORRECTIONS = "corrections"
SUBSCRIPTION_REFUNDS = "subscription_refunds"

# GBP, from billing observations.
GBP_PROVIDER_RECEIVABLE = "gbp_provider_receivable"
GBP_SUBSCRIPTION_REVENUE = "gbp_subscription_revenue"
GBP_REFUNDS = "gbp_refunds"


UNALLOCATED_PREFIX = "budget_unallocated:"


def budget_unallocated(budget_id: str) -> str:
    return UNALLOCATED_PREFIX + budget_id


def artist_payable(recipient_id: str) -> str:
    return f"artist_payable:{recipient_id}"


def operator_payable(recipient_id: str) -> str:
    return f"operator_payable:{recipient_id}"


def reserved_payouts(recipient_id: str) -> str:
    return f"reserved_payouts:{recipient_id}"


def paid(recipient_id: str) -> str:
    return f"paid:{recipient_id}"
