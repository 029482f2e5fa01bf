"""The storage suite's tallies, printed at the end of every run that includes them."""

from __future__ import annotations

# Lines the storage tests report, e.g. "storage faults: 140 injected, ..."; shown whether or not output is captured.
SUMMARY_LINES: list[str] = []


def pytest_terminal_summary(terminalreporter):
    for line in SUMMARY_LINES:
        terminalreporter.write_line(line)
