"""The console's screens: where they live in the admin site and which roles may open them."""

from __future__ import annotations

from dataclasses import dataclass

from porto_console.console.roles import ADMIN, AUDITOR, CONSOLE_ROLES, FINANCE, OPS


@dataclass(frozen=True)
class Screen:
    url_name: str
    title: str
    roles: frozenset[str]


DASHBOARD = Screen("console-dashboard", "Dashboard", frozenset(CONSOLE_ROLES))
HOLDS = Screen("console-holds", "Holds", frozenset({OPS, AUDITOR}))
PAYOUTS = Screen("console-payouts", "Payout runs", frozenset({FINANCE, AUDITOR}))
PAYMENTS = Screen("console-payments", "Payments", frozenset({FINANCE, AUDITOR}))
RECIPIENTS = Screen("console-recipients", "Recipient updates", frozenset({FINANCE, AUDITOR}))
CORRECTIONS = Screen("console-corrections", "Corrections", frozenset({FINANCE, AUDITOR}))
BUDGETS = Screen("console-budgets", "Budgets and balances", frozenset({FINANCE, AUDITOR}))
DAY_ALLOCATION = Screen("console-day-allocation", "Allocate days", frozenset({FINANCE, AUDITOR}))
ACCOUNTS = Screen("console-accounts", "Accounts", frozenset({ADMIN, AUDITOR}))
ACCOUNTING = Screen("console-accounting", "Trial balance", frozenset({FINANCE, AUDITOR}))
STATEMENTS = Screen("console-statement", "Account statements", frozenset({FINANCE, AUDITOR}))
JOURNAL = Screen("console-journal", "Journal explorer", frozenset({AUDITOR, ADMIN}))
QUARANTINE = Screen("console-quarantine", "Effect quarantine", frozenset({OPS, AUDITOR}))
QUARANTINE_RETRY_ROLES = frozenset({OPS})
STAFF_CHANGES = Screen("console-staff-changes", "Staff changes", frozenset({ADMIN, AUDITOR}))
LOCKOUTS = Screen("console-lockouts", "Sign-in lockouts", frozenset({ADMIN}))

SCREENS = (DASHBOARD, HOLDS, PAYOUTS, PAYMENTS, RECIPIENTS, CORRECTIONS, BUDGETS, DAY_ALLOCATION, ACCOUNTS, STAFF_CHANGES, LOCKOUTS,
           JOURNAL, QUARANTINE, ACCOUNTING, STATEMENTS)
