"""CSV exports of the list screens: exactly the rows a screen's filters select, every page, streamed.

Columns are for people and spreadsheets: times in ISO 8601 UTC, days as UTC dates, each amount both as a decimal in
its asset's unit and as integer minor units, states in the screens' words. A text cell a spreadsheet would read as a
formula is prefixed with a quote (OWASP's advice on CSV injection); amounts are written by this module and are
numbers, so they are never prefixed.
"""

from __future__ import annotations

import csv
import hashlib
import tempfile
from datetime import UTC, date, datetime
from typing import IO, Any, Callable, Iterable, Iterator

from django.http import FileResponse, StreamingHttpResponse

from ledger_engine.amounts import parse_amount
from ledger_engine.domain import chart
from ledger_engine.open_json import JsonObject, Report
from ledger_engine.selectors import accounting as selectors
from ledger_engine.selectors.view import LedgerView
from porto_console.console.labels import human
from porto_console.console.listing import ListQuery
from porto_console.console.services import journal
from porto_console.console.services.accounting import formatted

SPOOLED_IN_MEMORY_BYTES = 8 * 1024 * 1024  # a larger export spills to a temporary file

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
RECIPIENT_ACCOUNTS = tuple(make("") for make in (chart.artist_payable, chart.operator_payable,
                                                 chart.reserved_payouts, chart.paid))
Row = Any


class Number(str):
    """A cell this module wrote as a number: written as it is, sign included."""


def wanted(request) -> bool:
    return request.GET.get("format") == "csv"


def safe(cell: Any) -> str:
    """The cell as text, quoted if a spreadsheet would take it for a formula."""
    if cell is None:
        return ""
    if isinstance(cell, Number):
        return str(cell)
    text = str(cell)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def iso_time(at_ms: int | None) -> str:
    if at_ms is None:
        return ""
    seconds, millis = divmod(int(at_ms), 1000)
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{millis:03d}" if millis else "") + "Z"


def iso_day(day: int | None) -> str:
    """A UTC day number (days since 1970-01-01) as its date."""
    return "" if day is None else date.fromordinal(date(1970, 1, 1).toordinal() + int(day)).isoformat()


def decimal(minor_units: int, asset: str) -> Number:
    """The amount in the asset's unit, by integer arithmetic, without grouping or unit: a spreadsheet's number."""
    return Number(formatted(minor_units, asset).removesuffix(f" {asset}").replace(",", ""))


def money(minor_units: int | str | None, asset: str) -> tuple[Any, ...]:
    """``amount`` and ``amount_minor_units`` cells; empty where there is no amount."""
    if minor_units is None or minor_units == "":
        return "", ""
    value = minor_units if isinstance(minor_units, int) else parse_amount(minor_units)
    return decimal(value, asset), Number(str(value))


class Echo:
    """The csv writer's file: each row it writes is handed back rather than kept."""

    def write(self, value: str) -> str:
        return value


def lines(header: Iterable[str], rows: Iterable[Iterable[Any]]) -> Iterator[str]:
    writer = csv.writer(Echo(), lineterminator="\r\n")
    yield writer.writerow(header)
    for row in rows:
        yield writer.writerow([safe(cell) for cell in row])


def spooled(chunks: Iterable[str]) -> tuple[IO[bytes], str]:
    """``chunks`` written once to a temporary file (kept in memory while small), rewound, and their SHA-256: a file
    whose digest must be known before it is handed out is made once, never held whole in memory."""
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOLED_IN_MEMORY_BYTES)
    found = hashlib.sha256()
    for chunk in chunks:
        data = chunk.encode()
        found.update(data)
        spool.write(data)
    spool.seek(0)
    return spool, found.hexdigest()


def spooled_response(spool: IO[bytes], filename: str) -> FileResponse:
    """The spooled file as a streamed attachment; the response closes it once sent."""
    return FileResponse(spool, as_attachment=True, filename=filename, content_type="text/csv; charset=utf-8")


def response(chunks: Iterable[str], filename: str) -> StreamingHttpResponse:
    streamed = StreamingHttpResponse((chunk.encode() for chunk in chunks), content_type="text/csv; charset=utf-8")
    streamed["Content-Disposition"] = f'attachment; filename="{filename}"'
    return streamed


def filename(kind: str, first: date | None = None, last: date | None = None, *, at: str = "") -> str:
    """``porto-<kind>-<first>-to-<last>.csv``; an open end says so, and ``at`` names a moment instead of days."""
    if at:
        span = at
    elif first and last:
        span = f"{first.isoformat()}-to-{last.isoformat()}"
    elif first:
        span = f"from-{first.isoformat()}"
    elif last:
        span = f"to-{last.isoformat()}"
    else:
        span = "all-dates"
    return f"porto-{kind}-{span}.csv"


def table(header: tuple[str, ...], cells: Callable[[Row], Iterable[Any]], rows: Iterable[Row],
          name: str) -> StreamingHttpResponse:
    return response(lines(header, (cells(row) for row in rows)), name)


def listed(kind: str, header: tuple[str, ...], cells: Callable[[Row], Iterable[Any]], rows: Iterable[Row],
           query: ListQuery) -> StreamingHttpResponse:
    """A list screen's matching rows, every page, named for its date range."""
    return table(header, cells, rows, filename(kind, query.first, query.last))


# Payments: what the payments screen lists.
PAYMENT_HEADER = ("payment_id", "state", "run_id", "recipient_id", "recipient_name", "recipient_version",
                  "payout_address", "amount", "amount_minor_units", "asset", "prepared_at", "paid_at",
                  "transaction_hash", "held_for")
NameOf = Callable[[str], str | None]  # a recipient's display name by its ID (context.DisplayNames.of)


def payment_cells(name_of: NameOf) -> Callable[[Row], list[Any]]:
    def cells(row: Row) -> list[Any]:
        held = row.get("held_for") or {}
        return [row["payment_id"], human(row["state"]), row["run_id"], row["recipient_id"],
                name_of(row["recipient_id"]) or "", row["recipient_version"], row["payout_address"],
                *money(row["amount"], row["asset"]), row["asset"], iso_time(row["prepared_at_ms"]),
                iso_time(row["paid_at_ms"]), row["transaction_hash"] or "",
                "; ".join(f"{name}: {value}" for name, value in sorted(held.items()))]

    return cells


# Payout runs: the runs screen's columns, with the asset the runs pay in.
RUN_HEADER = ("run_id", "status", "prepared_by", "prepared_at", "payments", "total", "total_minor_units", "asset",
              "run_hash")


def run_cells(asset: str) -> Callable[[Row], list[Any]]:
    return lambda run: [run.run_id, human(run.status), run.prepared_by, iso_time(run.prepared_at_ms),
                        Number(str(run.payments)), *money(run.total, asset), asset, run.run_hash]


# Payables: what each recipient could be paid in a run now.
PAYABLE_HEADER = ("recipient_id", "recipient_name", "amount", "amount_minor_units", "asset", "lines", "line_ids",
                  "payout_address", "recipient_version", "statement_id", "waiting_run")


def payable_cells(asset: str, name_of: NameOf) -> Callable[[Row], list[Any]]:
    return lambda payable: [
        payable.recipient_id, name_of(payable.recipient_id) or "", *money(payable.amount, asset), asset,
        Number(str(len(payable.line_ids))),
        " ".join(payable.line_ids), payable.payout_address, payable.version, payable.statement_id or "",
        payable.waiting_run or ""]


# Payables per recipient: owed, reserved in approved runs, and paid.
BALANCE_HEADER = ("recipient_id", "recipient_name", "payable", "payable_minor_units", "reserved",
                  "reserved_minor_units", "paid", "paid_minor_units", "asset")


def balance_cells(asset: str, name_of: NameOf) -> Callable[[Row], list[Any]]:
    return lambda row: [row["recipient_id"], name_of(row["recipient_id"]) or "", *money(row["payable"], asset),
                        *money(row["reserved"], asset), *money(row["paid"], asset), asset]


# Budgets: each conservation equation's terms and totals.
def budget_header(funding_terms: tuple[str, ...], holding_terms: tuple[str, ...]) -> tuple[str, ...]:
    amounts = [name for term in (*funding_terms, *holding_terms, "funding_total", "holding_total")
               for name in (term, f"{term}_minor_units")]
    return ("budget_id", "period_id", "period_first_day", "listener_id", "balanced", *amounts, "asset")


def budget_cells(terms: tuple[str, ...], asset: str) -> Callable[[Row], list[Any]]:
    return lambda row: [row["budget_id"], row["period_id"], iso_day(row.get("first_day")), row["listener_id"],
                        "balanced" if row["balanced"] else "not balanced",
                        *(cell for term in (*terms, "funding_total", "holding_total")
                          for cell in money(row.get(term, "0"), asset)), asset]


# Holds: the open queue.
HOLD_HEADER = ("hold_id", "reasons", "listener_id", "node_id", "day", "raised_at", "at_stake", "at_stake_minor_units",
               "asset")


def hold_cells(asset: str) -> Callable[[Row], list[Any]]:
    return lambda row: [row["hold_id"], "; ".join(human(reason) for reason in row.get("reasons", ())),
                        row["listener_id"], row["node_id"], iso_day(row.get("day")), iso_time(row.get("raised_at_ms")),
                        *money(row.get("at_stake"), asset), asset]


# The journal: one row per posting line an entry made, one row for an entry that posted nothing; every entry's
# envelope, outcome and hashes on each of its rows.
JOURNAL_HEADER = ("sequence", "command_id", "command_type", "actor_id", "admitted_at", "outcome", "code", "journal",
                  "account", "recipient_id", "side", "amount", "amount_minor_units", "asset", "admitted_at_ms",
                  "delta_hash", "previous_entry_hash", "entry_hash")


def recipient_of(account: str) -> str:
    """The recipient a payable, reserved or paid account belongs to; empty for any other account."""
    return next((account[len(prefix):] for prefix in RECIPIENT_ACCOUNTS if account.startswith(prefix)), "")


def journal_lines(view: LedgerView, first: int, last: int, filters: JsonObject) -> Iterator[str]:
    """The CSV of the entries ``first`` to ``last`` the journal screen's ``filters`` select, oldest first."""
    rows = (row for summary in journal_summaries(view, first, last, filters)
            for row in journal_cells(summary, selectors.entry_postings(view, summary["sequence"])))
    return lines(JOURNAL_HEADER, rows)


def journal_summaries(view: LedgerView, first: int, last: int, filters: JsonObject) -> Iterator[Report]:
    """Window after window of the screen's own selection, so the file holds just what the screen lists."""
    after = first - 1
    while True:
        found = journal.window(view, last, after=after or None, oldest_first=True, **filters)
        yield from found.entries
        if found.next_cursor is None:
            return
        after = found.next_cursor


def journal_cells(summary: Report, postings: list[selectors.Posting]) -> Iterator[list[Any]]:
    envelope = [summary["sequence"], summary["command_id"], summary["command_type"], summary["actor_id"],
                iso_time(summary["admitted_at_ms"]), human(summary["outcome"]), summary["code"]]
    hashes = [Number(str(summary["admitted_at_ms"])), summary["delta_hash"], summary["previous_entry_hash"],
              summary["entry_hash"]]
    if not postings:
        yield [*envelope, "", "", "", "", "", "", "", *hashes]
    for posting in postings:
        yield [*envelope, posting.journal, posting.account, recipient_of(posting.account), posting.side,
               *money(posting.amount, posting.asset), posting.asset, *hashes]
