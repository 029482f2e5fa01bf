"""Every list searched, ranged, sorted and paged by the one listing piece; raw minor units on every screen with
amounts; the trial balance at an older sequence checked against a replay of the journal; recipient updates and
budgets linked to the journal entries that wrote them and back."""

from __future__ import annotations

import html
import re

import pytest

from ledger_engine.selectors import accounting, trial_replay
from porto_console.console.handles import seal

NO_ROWS = re.compile(r"<td colspan")


def table_rows(page: str, table_id: str) -> list[str]:
    """The rows of one table's body, without its "nothing matches" row."""
    body = re.search(rf'id="{table_id}".*?<tbody>(.*?)</tbody>', page, re.DOTALL).group(1)
    return [row for row in re.findall(r"<tr>(.*?)</tr>", body, re.DOTALL) if not NO_ROWS.search(row)]


def state(ledger, prefix: str) -> list[dict]:
    return [value["data"] for _, value in ledger.scan("state", prefix, limit=10_000)]


def cells(row: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)]


def minor_units(shown: str) -> int:
    return int(shown.split()[0].replace(",", "").replace(".", ""))


def searches(ledger) -> list[tuple[str, str, dict, str, str]]:
    """(role, list, filters, search field, a value to find), one per list."""
    run = state(ledger, "payment_run/")[0]
    correction = state(ledger, "correction_request/")[0]
    change = state(ledger, "staff_change/")[0]
    budget = state(ledger, "budget/")[0]
    hold = ledger.scan("indexes", "hold_open/", limit=1)[0][1]
    update = state(ledger, "recipient_update/")[0]
    return [
        ("finance", "/ledger/recipients/", {"status": update["status"]}, "recipient", update["recipient_id"]),
        ("finance", "/ledger/payouts/", {"status": "all"}, "run", run["run_id"][-8:]),
        ("finance", "/ledger/corrections/", {"status": correction["status"]}, "budget", correction["budget_id"]),
        ("finance", "/ledger/budgets/", {}, "budget", budget["budget_id"]),
        ("finance", "/ledger/budgets/payables/", {}, "recipient", "ARTIST-0"),
        ("admin", "/ledger/accounts/", {}, "account", "finance"),
        ("admin", "/ledger/staff-changes/", {"status": change["status"]}, "account", change["target"]),
        ("ops", "/ledger/holds/", {}, "listener", hold["listener_id"]),
    ]


TABLES = {"/ledger/payouts/": "runs", "/ledger/corrections/": "corrections", "/ledger/budgets/": "budgets",
          "/ledger/budgets/payables/": "balances", "/ledger/accounts/": "accounts",
          "/ledger/staff-changes/": "staff-changes", "/ledger/holds/": "holds", "/ledger/recipients/": "updates"}


def test_a_search_narrows_every_list_and_a_search_for_nothing_empties_it(client_as, ledger):
    for role, url, filters, field, value in searches(ledger):
        client = client_as(role)
        everything = table_rows(client.get(url, filters).content.decode(), TABLES[url])
        page = client.get(url, {**filters, field: value}).content.decode()
        found = table_rows(page, TABLES[url])
        assert found and all(value.lower() in row.lower() for row in found), url
        assert len(found) <= len(everything), url
        assert f'value="{value}"' in page, url  # the search stays in its box
        nothing = client.get(url, {**filters, field: "no-such-thing-anywhere"}).content.decode()
        assert table_rows(nothing, TABLES[url]) == [], url


def test_a_search_narrows_more_than_the_whole_list(client_as, ledger):
    page = client_as("finance").get("/ledger/budgets/payables/").content.decode()
    every = table_rows(page, "balances")
    one = table_rows(client_as("finance").get("/ledger/budgets/payables/", {"recipient": "artist-0"}).content.decode(),
                     "balances")
    assert 0 < len(one) < len(every)


def test_payables_sort_by_amount_both_ways_and_the_sort_links_keep_the_search(client_as, ledger):
    client = client_as("finance")
    search = {"recipient": "demo-"}
    ascending_page = client.get("/ledger/budgets/payables/", {**search, "sort": "paid", "dir": "asc"}).content.decode()
    ascending = [minor_units(cells(row)[3]) for row in table_rows(ascending_page, "balances")]
    assert len(ascending) > 2 and ascending == sorted(ascending) and ascending != ascending[::-1]
    descending_page = client.get("/ledger/budgets/payables/", {**search, "sort": "paid", "dir": "desc"}).content.decode()
    assert [minor_units(cells(row)[3]) for row in table_rows(descending_page, "balances")] == sorted(ascending,
                                                                                                      reverse=True)
    header = re.search(r'<th scope="col" aria-sort="ascending"><a href="\?([^"]+)"', ascending_page).group(1)
    assert "recipient=demo-" in html.unescape(header) and "dir=desc" in html.unescape(header)


def test_runs_sort_by_total_and_a_prepared_range_after_every_run_finds_none(client_as, ledger):
    client = client_as("finance")
    page = client.get("/ledger/payouts/", {"status": "all", "sort": "total", "dir": "asc"}).content.decode()
    totals = [minor_units(cells(row)[2]) for row in table_rows(page, "runs")]
    assert len(totals) == len(state(ledger, "payment_run/")) > 1 and totals == sorted(totals)
    later = client.get("/ledger/payouts/", {"status": "all", "prepared_from": "2099-01-01"}).content.decode()
    assert table_rows(later, "runs") == []
    reversed_range = client.get("/ledger/payouts/", {"status": "all", "prepared_from": "2026-10-05",
                                                     "prepared_to": "2026-10-01"}).content.decode()
    assert "The range starts after it ends." in reversed_range


def test_the_next_page_keeps_the_search_and_the_sort_on_another_list(client_as, ledger, monkeypatch):
    from porto_console.console import paging
    from porto_console.console.views import budgets as budget_views

    monkeypatch.setattr(budget_views, "paginate", lambda rows, number: paging.paginate(rows, number, size=2))
    client = client_as("finance")
    search = {"recipient": "demo-", "sort": "payable", "dir": "desc"}
    first = client.get("/ledger/budgets/payables/", search).content.decode()
    next_link = html.unescape(re.search(r'<a href="\?([^"]+)">next ›</a>', first).group(1))
    assert all(f"{name}={value}" in next_link for name, value in search.items()) and "page=2" in next_link
    second = client.get(f"/ledger/budgets/payables/?{next_link}").content.decode()
    shown = [*table_rows(first, "balances"), *table_rows(second, "balances")]
    payable = [minor_units(cells(row)[1]) for row in shown]
    assert len(shown) == 4 and payable == sorted(payable, reverse=True)


def test_holds_are_paged_by_number_oldest_first_and_keep_their_reason(client_as, ledger, monkeypatch):
    from porto_console.console import paging
    from porto_console.console.views import holds as hold_views

    monkeypatch.setattr(hold_views, "paginate", lambda rows, number: paging.paginate(rows, number, size=1))
    ops = client_as("ops")
    reason = ledger.scan("indexes", "hold_open_count/", limit=1)[0][0].rsplit("/", 1)[1]
    first = ops.get("/ledger/holds/", {"reason": reason}).content.decode()
    next_link = html.unescape(re.search(r'<a href="\?([^"]+)">next ›</a>', first).group(1))
    assert f"reason={reason}" in next_link and "page=2" in next_link
    second = ops.get(f"/ledger/holds/?{next_link}").content.decode()
    raised = [re.search(r"<td>(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC)</td>", table_rows(page, "holds")[0]).group(1)
              for page in (first, second)]
    assert raised == sorted(raised)


@pytest.mark.parametrize(("role", "url"), [("finance", "/ledger/payouts/payments/?state=all"),
                                           ("finance", "/ledger/payouts/prepare/"),
                                           ("finance", "/ledger/payouts/?status=all"),
                                           ("finance", "/ledger/budgets/"), ("finance", "/ledger/budgets/payables/"),
                                           ("finance", "/ledger/corrections/?status=approved")])
def test_every_screen_with_amounts_shows_raw_minor_units_on_the_toggle(client_as, ledger, role, url):
    client = client_as(role)
    units = client.get(url).content.decode()
    assert 'id="raw-toggle"' in units and "Show raw minor units" in units
    shown = re.findall(r'<span class="money" title="(-?\d+) minor units">([^<]+)</span>', units)
    assert shown and all(text.endswith(" USDC") for _, text in shown)
    raw = client.get(url + ("&" if "?" in url else "?") + "raw=1").content.decode()
    assert "Show amounts in units" in raw
    raw_figures = re.findall(r'<span class="money raw" title="[^"]+ USDC">(-?\d+)</span>', raw)
    assert sorted(raw_figures) == sorted(minor for minor, _ in shown)
    assert '<input type="hidden" name="raw" value="1">' in raw or "console-filters" not in raw  # a search keeps it
    assert "money raw" in client.get(url).content.decode()  # the toggle stays on from screen to screen
    assert "money raw" not in client.get(url, {"raw": "0"}).content.decode()


def test_a_runs_page_shows_raw_minor_units_on_the_toggle(client_as, ledger):
    run = state(ledger, "payment_run/")[0]
    url = f"/ledger/payouts/{seal('run', run['run_id'])}/"
    page = client_as("finance").get(url, {"raw": "1"}).content.decode()
    total = int(run["frozen"]["total"])
    assert f'<span class="money raw" title="{total // 1_000_000:,}.{total % 1_000_000:06d} USDC">{total}</span>' in page
    assert "Show amounts in units" in page


@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.9, 1.0])
def test_the_trial_balance_at_an_older_sequence_equals_a_replay_of_the_journal(ledger, fraction):
    sequence = max(1, int(ledger.head().sequence * fraction))
    folded = accounting.trial_balance(ledger.view(), at_sequence=sequence)
    replayed = trial_replay.replayed_trial_balance(ledger.view(), sequence)
    assert folded.rows == replayed.rows and folded.totals == replayed.totals
    assert trial_replay.compare(folded, ledger.view()).agrees


def test_older_trial_balances_differ_from_the_heads_and_a_changed_figure_is_named(ledger):
    head = accounting.trial_balance(ledger.view())
    early = accounting.trial_balance(ledger.view(), at_sequence=head.sequence // 4)
    assert early.totals != head.totals
    wrong = accounting.tally(early.sequence, [accounting.TrialBalanceRow(row.asset, row.account, row.debits + 1,
                                                                         row.credits + 1) if index == 0 else row
                                              for index, row in enumerate(early.rows)])
    comparison = trial_replay.compare(wrong, ledger.view())
    assert not comparison.agrees and comparison.differences == [f"{early.rows[0].asset} {early.rows[0].account}"]


def test_the_trial_balance_screen_at_an_older_sequence_runs_the_replay_check(client_as, ledger):
    sequence = ledger.head().sequence // 2
    page = client_as("auditor").get("/ledger/accounting/trial-balance/",
                                    {"sequence": str(sequence), "replay": "on"}).content.decode()
    assert f'id="trial-sequence">{sequence}<' in page and f"the head is {ledger.head().sequence}" in page
    assert 'id="trial-replay"' in page and "gives the same debits and credits for every account" in page
    earlier = html.unescape(re.search(r'<a href="\?([^"]+)" id="trial-earlier">', page).group(1))
    assert f"sequence={sequence - 1}" in earlier


def test_a_budget_links_to_the_journal_entries_that_wrote_it_and_back(client_as, ledger):
    budget_id = state(ledger, "budget/")[0]["budget_id"]
    handle = seal("budget", budget_id)
    finance = client_as("finance")
    listing = finance.get("/ledger/budgets/", {"budget": budget_id}).content.decode()
    assert f'href="/ledger/accounting/history/budget/{handle}/"' in listing
    history = finance.get(f"/ledger/accounting/history/budget/{handle}/").content.decode()
    sequences = [int(found) for found in re.findall(r'href="/ledger/journal/(\d+)/"', history)]
    assert sequences
    entry = client_as("auditor").get(f"/ledger/journal/{sequences[0]}/").content.decode()
    assert f'href="/ledger/budgets/?budget={budget_id}"' in entry


def test_a_recipient_update_links_to_the_journal_entries_that_wrote_it_and_back(client_as, ledger):
    update = state(ledger, "recipient_update/")[0]
    record_id = f"{update['recipient_id']}/{update['update_id']}"
    handle = seal("recipient-update", record_id)
    finance = client_as("finance")
    detail = finance.get(f"/ledger/recipients/{handle}/").content.decode()
    assert f'href="/ledger/accounting/history/recipient_update/{handle}/"' in detail
    history = finance.get(f"/ledger/accounting/history/recipient_update/{handle}/").content.decode()
    sequences = [int(found) for found in re.findall(r'href="/ledger/journal/(\d+)/"', history)]
    assert sequences and all(any(record.kind == "recipient_update" and record.record_id == record_id
                                 for record in accounting.entry_records(ledger.store, sequence))
                             for sequence in sequences)
    entry = client_as("auditor").get(f"/ledger/journal/{sequences[0]}/").content.decode()
    assert f'href="/ledger/recipients/{handle}/"' in entry


def test_the_quarantine_is_searched_by_kind_and_sorted_by_retries_and_retry_all_counts_every_parked_effect(
        client_as, ledger, settings):
    from ledger_engine.layout import INDEXES, OUTBOX
    from porto_console.effects.quarantine import Quarantine

    quarantine = Quarantine(settings.QUARANTINE_DIR)
    effect_ids = [key.rsplit("/", 1)[1] for key, _ in ledger.scan(INDEXES, "effect_by_status/", limit=3)]
    for retries, effect_id in enumerate(effect_ids, start=2):
        quarantine.add(effect_id, ledger.get(OUTBOX, effect_id).data["kind"], f"Poison number {retries}", retries)
    ops = client_as("ops")
    by_retries = ops.get("/ledger/quarantine/", {"sort": "retries", "dir": "asc"}).content.decode()
    assert [int(cells(row)[4]) for row in table_rows(by_retries, "quarantine")] == [2, 3, 4]
    one = ops.get("/ledger/quarantine/", {"cause": "number 3"}).content.decode()
    assert [cells(row)[1] for row in table_rows(one, "quarantine")] == [effect_ids[1]]
    assert 'value="Retry all 3"' in one and 'value="number 3"' in one
    none = ops.get("/ledger/quarantine/", {"effect": "no-such-effect"}).content.decode()
    assert table_rows(none, "quarantine") == [] and "No quarantined effect matches." in none
    later = ops.get("/ledger/quarantine/", {"quarantined_from": "2099-01-01"}).content.decode()
    assert table_rows(later, "quarantine") == []


def test_lockouts_are_searched_by_username_and_address_and_sorted_by_failures(client_as, ledger):
    from axes.models import AccessAttempt

    for number, failures in enumerate((7, 5, 9)):
        AccessAttempt.objects.create(username=f"locked-{number}", ip_address=f"10.0.0.{number}",
                                     failures_since_start=failures, get_data="", post_data="", http_accept="",
                                     path_info="/login/")
    admin = client_as("admin")
    by_failures = admin.get("/ledger/lockouts/", {"sort": "failures", "dir": "asc"}).content.decode()
    assert [int(cells(row)[2]) for row in table_rows(by_failures, "lockouts")] == [5, 7, 9]
    descending = admin.get("/ledger/lockouts/", {"sort": "failures"}).content.decode()
    assert [int(cells(row)[2]) for row in table_rows(descending, "lockouts")] == [9, 7, 5]
    one = admin.get("/ledger/lockouts/", {"address": "10.0.0.2"}).content.decode()
    assert [cells(row)[0] for row in table_rows(one, "lockouts")] == ["locked-2"]
    named = admin.get("/ledger/lockouts/", {"username": "LOCKED-1", "sort": "failures"}).content.decode()
    assert [cells(row)[0] for row in table_rows(named, "lockouts")] == ["locked-1"]
    assert "No lockout matches." in admin.get("/ledger/lockouts/", {"username": "nobody"}).content.decode()


def admission_days(ledger) -> dict[int, str]:
    from datetime import UTC, datetime

    return {sequence: datetime.fromtimestamp(ledger.journal_entry(sequence)["envelope"]["admitted_at_ms"] / 1000,
                                             UTC).date().isoformat()
            for sequence in range(1, ledger.head().sequence + 1)}


def journal_sequences(page: str) -> list[int]:
    return [int(cells(row)[0]) for row in table_rows(page, "journal")]


def test_the_first_sequence_admitted_from_a_time_is_found_by_bisection_as_a_scan_finds_it(ledger):
    from ledger_engine.selectors import journal_queries

    view = ledger.view()
    times = [journal_queries.admitted_at_ms(view, sequence) for sequence in range(1, view.sequence + 1)]
    assert times == sorted(times) and times[0] < times[-1]
    for at_ms in (0, times[0], times[0] + 1, times[len(times) // 3], times[len(times) // 2] + 1, times[-1],
                  times[-1] + 1):
        scanned = next((index + 1 for index, time in enumerate(times) if time >= at_ms), len(times) + 1)
        assert journal_queries.first_admitted_from(view, at_ms) == scanned, at_ms


def test_the_journal_in_an_admission_range_shows_exactly_that_days_entries_newest_or_oldest_first(client_as, ledger):
    days = admission_days(ledger)
    day = days[ledger.head().sequence // 2]
    that_day = [sequence for sequence, admitted in days.items() if admitted == day]
    assert 0 < len(that_day) < len(days)
    auditor = client_as("auditor")
    span = {"admitted_from": day, "admitted_to": day}
    newest = auditor.get("/ledger/journal/", span).content.decode()
    assert journal_sequences(newest) == sorted(that_day, reverse=True)[:50]
    oldest = auditor.get("/ledger/journal/", {**span, "sort": "sequence", "dir": "asc"}).content.decode()
    assert journal_sequences(oldest) == sorted(that_day)[:50]
    assert 'aria-sort="ascending"' in oldest
    reversed_range = auditor.get("/ledger/journal/", {"admitted_from": day, "admitted_to": "2000-01-01"}).content
    assert "The range starts after it ends." in reversed_range.decode()
    assert journal_sequences(reversed_range.decode())[0] == ledger.head().sequence
    assert journal_sequences(auditor.get("/ledger/journal/", {"admitted_from": "2099-01-01"}).content.decode()) == []


def test_the_journal_oldest_first_pages_up_and_keeps_its_filters(client_as, ledger):
    auditor = client_as("auditor")
    first = auditor.get("/ledger/journal/", {"sort": "sequence", "dir": "asc", "outcome": "accepted"}).content.decode()
    shown = journal_sequences(first)
    assert len(shown) == 50 and shown == sorted(shown) and shown[0] == 1
    later = html.unescape(re.search(r'<a href="\?([^"]+)">later ›</a>', first).group(1))
    assert "dir=asc" in later and "outcome=accepted" in later and f"after={shown[-1]}" in later
    second_page = auditor.get(f"/ledger/journal/?{later}").content.decode()
    second = journal_sequences(second_page)
    assert second and second[0] > shown[-1] and second == sorted(second)
    assert 'name="after"' not in second_page  # a new search from this page starts at the span's oldest again
    header = html.unescape(re.search(r'aria-sort="ascending"><a href="\?([^"]+)"', first).group(1))
    assert "dir=desc" in header and "after" not in header and "outcome=accepted" in header


def test_a_recipient_links_to_the_journal_entries_that_wrote_it_and_back(client_as, ledger):
    approved = next(update for update in state(ledger, "recipient_update/") if update["status"] == "approved")
    recipient_id = approved["recipient_id"]
    handle = seal("recipient", recipient_id)
    history_url = f"/ledger/accounting/history/recipient/{handle}/"
    finance = client_as("finance")
    updates = finance.get("/ledger/recipients/", {"status": "approved", "recipient": recipient_id}).content.decode()
    assert f'href="{history_url}"' in updates
    detail = finance.get(f"/ledger/recipients/{seal('recipient-update', recipient_id + '/' + approved['update_id'])}/")
    assert f'id="recipient-history" href="{history_url}"' in detail.content.decode()
    history = finance.get(history_url).content.decode()
    sequences = [int(found) for found in re.findall(r'href="/ledger/journal/(\d+)/"', history)]
    assert len(sequences) >= 2 and sequences == sorted(sequences)  # registered, then changed by the approval
    assert all(accounting.TouchedRecord("recipient", recipient_id) in accounting.entry_records(ledger.store, sequence)
               for sequence in sequences)
    approval = next(sequence for sequence in sequences
                    if ledger.journal_entry(sequence)["envelope"]["command_type"] == "UpdateRecipient"
                    and ledger.journal_entry(sequence)["envelope"]["payload"]["update_id"] == approved["update_id"])
    entry = client_as("auditor").get(f"/ledger/journal/{approval}/").content.decode()
    assert f'href="{history_url}"' in entry
    assert f'href="/ledger/recipients/?status=approved&amp;recipient={recipient_id}"' in entry
