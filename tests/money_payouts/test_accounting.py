"""Accounting reads: an entry's postings and records, account statements with running balances, the trial balance."""

from __future__ import annotations

import pytest

from ledger_engine.domain.chart import artist_payable, reserved_payouts
from ledger_engine.errors import LedgerError
from ledger_engine.selectors import accounting
from ledger_engine.selectors.money_queries import balance
from tests.money_payouts.world import PAYMENT

EVER = (0, 2**62)


def _approval_sequence(world) -> int:
    """The first entry that touched run-1 and posted: its approval, which reserves the payables."""
    view = world.owner.view()
    return next(sequence for sequence in accounting.entries_touching(view, "run", "run-1")
                if accounting.entry_postings(view, sequence))


def test_an_approval_entry_posts_balanced_lines_and_links_its_run_and_payments(approved):
    view = approved.owner.view()
    sequence = _approval_sequence(approved)
    postings = accounting.entry_postings(view, sequence)
    assert postings and sum(p.debit for p in postings) == sum(p.credit for p in postings)
    assert {p.account for p in postings} >= {artist_payable("artist-a"), reserved_payouts("artist-a")}
    touched = accounting.entry_records(view, sequence)
    assert accounting.TouchedRecord("run", "run-1") in touched
    assert accounting.TouchedRecord("payment", PAYMENT) in touched
    assert sequence in accounting.entries_touching(view, "payment", PAYMENT)


def test_a_statement_runs_its_balance_and_ends_at_the_accounts_balance(approved):
    view = approved.owner.view()
    accounts = accounting.recipient_accounts("artist-a")
    statement = accounting.account_statement(view, accounts, "USDC", from_ms=EVER[0], to_ms=EVER[1])
    assert statement.opening == 0 and statement.rows
    running = 0
    for row in statement.rows:
        running += row.posting.credit - row.posting.debit
        assert row.balance == running
    assert statement.closing == sum(balance(view, account, "USDC").net_credit for account in accounts)


def test_a_statement_from_a_later_date_opens_with_the_earlier_balance(approved):
    view = approved.owner.view()
    accounts = (artist_payable("artist-a"),)
    whole = accounting.account_statement(view, accounts, "USDC", from_ms=EVER[0], to_ms=EVER[1])
    cut = whole.rows[-1].admitted_at_ms
    later = accounting.account_statement(view, accounts, "USDC", from_ms=cut, to_ms=EVER[1])
    earlier = [row for row in whole.rows if row.admitted_at_ms < cut]
    assert later.opening == (earlier[-1].balance if earlier else 0)
    assert later.closing == whole.closing


def test_the_trial_balance_balances_per_asset_at_any_sequence(approved):
    view = approved.owner.view()
    head = approved.owner.head().sequence
    for sequence in (1, _approval_sequence(approved) - 1, head):
        trial = accounting.trial_balance(view, at_sequence=sequence)
        for debits, credits in trial.totals.values():
            assert debits == credits
    latest = accounting.trial_balance(view)
    assert latest.sequence == head and "USDC" in latest.totals
    assert latest.totals != accounting.trial_balance(view, at_sequence=_approval_sequence(approved) - 1).totals


def test_an_unbalanced_trial_balance_is_refused(approved, monkeypatch):
    real = accounting.balance

    def skewed(view, account, asset, **options):
        folded = real(view, account, asset, **options)
        return type(folded)(folded.account, folded.asset, folded.sequence, folded.debits + 1, folded.credits,
                            folded.postings) if account == "treasury" else folded
    monkeypatch.setattr(accounting, "balance", skewed)
    with pytest.raises(LedgerError) as refused:
        accounting.trial_balance(approved.owner.view())
    assert refused.value.code == "INVARIANT_VIOLATION"


def test_the_trial_balance_equals_a_fold_of_the_journals_own_posted_events(approved):
    """An independent recompute: every Posted event of every entry up to the sequence, read from the events family."""
    view = approved.owner.view()
    sequence = _approval_sequence(approved)
    folded: dict[tuple[str, str], list[int]] = {}
    for at in range(1, sequence + 1):
        for posting in accounting.entry_postings(view, at):
            totals = folded.setdefault((posting.asset, posting.account), [0, 0])
            totals[0] += posting.debit
            totals[1] += posting.credit
    trial = accounting.trial_balance(view, at_sequence=sequence)
    assert {(row.asset, row.account): [row.debits, row.credits] for row in trial.rows} == folded
