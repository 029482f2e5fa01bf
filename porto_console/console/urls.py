"""The console's routes inside the admin site. IDs in paths are sequences or sealed handles, never raw."""

from __future__ import annotations

from typing import Callable, Iterable

from django.urls import path

from porto_console.console.roles import ADMIN, FINANCE, command_roles, require_roles
from porto_console.console.screens import (
    ACCOUNTING, ACCOUNTS, BUDGETS, CORRECTIONS, DASHBOARD, DAY_ALLOCATION, HOLDS, JOURNAL, LOCKOUTS, PAYMENTS, PAYOUTS, QUARANTINE,
    QUARANTINE_RETRY_ROLES, RECIPIENTS, STAFF_CHANGES, STATEMENTS,
)
from porto_console.console.views import (
    accounting, accounts, budgets, corrections, dashboard, day_allocation, dispatch, holds, journal, payouts, quarantine,
    recipients, staff, statements,
)
from porto_console.console.views import search as record_search

ADMIN_ONLY = frozenset({ADMIN})
STATEMENT_FILE_ROLES = frozenset({FINANCE})
# whoever sees a run, a payment, a hold, a recipient update or a budget
HISTORY_ROLES = PAYOUTS.roles | HOLDS.roles | JOURNAL.roles | RECIPIENTS.roles | BUDGETS.roles


def console_urls(site) -> list:
    def route(pattern: str, view: Callable, name: str, roles: Iterable[str]):
        return path(pattern, site.admin_view(require_roles(roles)(view)), name=name)

    return [
        route("ledger/", dashboard.dashboard, DASHBOARD.url_name, DASHBOARD.roles),
        route("ledger/search/", record_search.search, "console-search", DASHBOARD.roles),
        route("ledger/dispatch/pause/", dispatch.pause, "console-dispatch-pause", command_roles("PauseDispatch")),
        route("ledger/dispatch/resume/", dispatch.request_resume, "console-dispatch-resume",
              command_roles("RequestDispatchResume")),
        route("ledger/dispatch/resume/approve/", dispatch.approve_resume, "console-dispatch-resume-approve",
              command_roles("DecideDispatchResume")),
        route("ledger/dispatch/resume/decline/", dispatch.decline_resume, "console-dispatch-resume-decline",
              command_roles("DecideDispatchResume")),
        route("ledger/quarantine/", quarantine.quarantine_list, QUARANTINE.url_name, QUARANTINE.roles),
        route("ledger/quarantine/retry/", quarantine.retry_many, "console-quarantine-retry-many",
              QUARANTINE_RETRY_ROLES),
        route("ledger/quarantine/<str:handle>/retry/", quarantine.retry, "console-quarantine-retry",
              QUARANTINE_RETRY_ROLES),
        route("ledger/holds/", holds.hold_queue, HOLDS.url_name, HOLDS.roles),
        route("ledger/holds/bulk/", holds.hold_bulk, "console-hold-bulk", command_roles("DecideHold")),
        route("ledger/holds/<str:handle>/", holds.hold_detail, "console-hold", HOLDS.roles),
        route("ledger/payouts/", payouts.run_list, PAYOUTS.url_name, PAYOUTS.roles),
        route("ledger/payouts/prepare/", payouts.prepare, "console-payout-prepare", command_roles("PreparePayoutRun")),
        route("ledger/payouts/payments/", payouts.payment_list, PAYMENTS.url_name, PAYMENTS.roles),
        route("ledger/payouts/<str:handle>/", payouts.run_detail, "console-payout-run", PAYOUTS.roles),
        route("ledger/payouts/<str:handle>/approve/", payouts.approve, "console-payout-approve", PAYOUTS.roles),
        route("ledger/payouts/<str:handle>/cancel/", payouts.cancel, "console-payout-cancel", PAYOUTS.roles),
        route("ledger/statements/<str:handle>/file/", statements.download, "console-statement-file",
              STATEMENT_FILE_ROLES),
        route("ledger/statements/<str:handle>/", statements.files, "console-statement-files", STATEMENT_FILE_ROLES),
        route("ledger/statement-parts/<str:handle>/", statements.download_parts, "console-statement-parts",
              STATEMENT_FILE_ROLES),
        route("ledger/recipients/", recipients.update_list, RECIPIENTS.url_name, RECIPIENTS.roles),
        route("ledger/recipients/request/", recipients.request_update, "console-recipient-request",
              command_roles("UpdateRecipient")),
        route("ledger/recipients/<str:handle>/", recipients.update_detail, "console-recipient-update",
              RECIPIENTS.roles),
        route("ledger/recipients/<str:handle>/approve/", recipients.approve, "console-recipient-approve",
              RECIPIENTS.roles),
        route("ledger/recipients/<str:handle>/decline/", recipients.decline, "console-recipient-decline",
              RECIPIENTS.roles),
        route("ledger/day-allocation/", day_allocation.request_list, DAY_ALLOCATION.url_name, DAY_ALLOCATION.roles),
        route("ledger/day-allocation/<str:handle>/", day_allocation.request_detail, "console-day-allocation-request",
              DAY_ALLOCATION.roles),
        route("ledger/corrections/", corrections.correction_list, CORRECTIONS.url_name, CORRECTIONS.roles),
        route("ledger/corrections/request/", corrections.request_correction, "console-correction-request",
              command_roles("RequestCorrection")),
        route("ledger/corrections/<str:handle>/", corrections.correction_detail, "console-correction",
              CORRECTIONS.roles),
        route("ledger/corrections/<str:handle>/approve/", corrections.approve, "console-correction-approve",
              CORRECTIONS.roles),
        route("ledger/corrections/<str:handle>/decline/", corrections.decline, "console-correction-decline",
              CORRECTIONS.roles),
        route("ledger/budgets/", budgets.budget_list, BUDGETS.url_name, BUDGETS.roles),
        route("ledger/budgets/payables/", budgets.balances, "console-balances", BUDGETS.roles),
        route("ledger/accounts/", accounts.account_list, ACCOUNTS.url_name, ACCOUNTS.roles),
        route("ledger/accounts/new/", accounts.account_new, "console-account-new", command_roles("RegisterAccount")),
        route("ledger/accounts/<str:handle>/", accounts.account_detail, "console-account", ACCOUNTS.roles),
        route("ledger/accounts/<str:handle>/request/", accounts.request_change, "console-account-request",
              command_roles("RequestStaffChange")),
        route("ledger/accounts/<str:handle>/link/", accounts.send_link, "console-account-link", ADMIN_ONLY),
        route("ledger/staff-changes/", staff.change_list, STAFF_CHANGES.url_name, STAFF_CHANGES.roles),
        route("ledger/staff-changes/<str:handle>/", staff.change_detail, "console-staff-change", STAFF_CHANGES.roles),
        route("ledger/staff-changes/<str:handle>/approve/", staff.approve, "console-staff-change-approve",
              command_roles("DecideStaffChange")),
        route("ledger/staff-changes/<str:handle>/decline/", staff.decline, "console-staff-change-decline",
              command_roles("DecideStaffChange")),
        route("ledger/lockouts/", staff.lockout_list, LOCKOUTS.url_name, LOCKOUTS.roles),
        route("ledger/lockouts/<str:handle>/clear/", staff.lockout_clear, "console-lockout-clear",
              command_roles("RecordLockoutCleared")),
        route("ledger/journal/", journal.journal, JOURNAL.url_name, JOURNAL.roles),
        route("ledger/journal/lookup/", journal.lookup, "console-journal-lookup", JOURNAL.roles),
        route("ledger/journal/verify/", journal.verify, "console-journal-verify", JOURNAL.roles),
        route("ledger/journal/export/", journal.export, "console-journal-export", JOURNAL.roles),
        route("ledger/journal/export-csv/", journal.export_csv, "console-journal-export-csv", JOURNAL.roles),
        route("ledger/journal/<int:sequence>/", journal.entry, "console-journal-entry", JOURNAL.roles),
        route("ledger/accounting/trial-balance/", accounting.trial_balance, ACCOUNTING.url_name, ACCOUNTING.roles),
        route("ledger/accounting/statement/", accounting.statement, STATEMENTS.url_name, STATEMENTS.roles),
        route("ledger/accounting/history/<str:kind>/<str:handle>/", accounting.record_history,
              "console-record-history", HISTORY_ROLES),
        route("ledger/accounting/conservation-check/", accounting.check_conservation, "console-conservation-check",
              command_roles("CheckConservation")),
    ]
