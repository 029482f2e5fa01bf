"""Day lines: allocation lines without a budget, each one recipient's part of a frozen chunk of a day.

A freeze (docs/adr/0073) writes no line per listener-day line. It moves each
listener-day's slice from its budget's ``unallocated`` to ``frozen`` and
writes one *day line* per recipient and role of each chunk of at most
``MAX_CHUNK_LISTENER_DAYS`` listener-days: an ``allocation_line`` record with
``budget_id`` and ``listener_id`` null, ``day`` set, and
``artifact: {"day", "chunk", "hash"}`` naming the chunk it totals. Its ID is
derived, never chosen:

    dayline- || hex(SHA-256( UTF8("porto:london:day-line:v1\\n") || JCS([day, chunk, role, recipient_id]) ))[:32]

A day line is paid like any line (``payable -> reserved -> paid``, Porto's
share ``paid`` at once) and moves no budget term when it is. ``FreezeDayChunk``
(commands/money/freeze.py) writes them, with the chunk's record they total.

A day line's amount never changes. A correction of a frozen listener-day
(commands/money/corrections.py) that takes a recipient's part out of a payable
day line reverses it and writes, for what remains, a *remainder* day line of
the same chunk, role and recipient whose ID is derived from the correction too:

    dayline- || hex(SHA-256( UTF8("porto:london:day-line:v1\\n")
                             || JCS([day, chunk, role, recipient_id, correction_id]) ))[:32]

It names that correction (``correction_id``) and the day line it follows
(``replaces``). So a chunk's (role, recipient) has one line live at a time,
found by following ``reversed_by`` from the freeze's line (``remainder_line_id``).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from ledger_engine.canonical import domain_hash
from ledger_engine.domain.schema.money_allocation import AllocationLine

DAY_LINE_DOMAIN = "porto:london:day-line:v1\n"
DAY_LINE_ID_PREFIX = "dayline-"
MAX_CHUNK_LISTENER_DAYS = 2_500
ARTIFACT_FIELDS = ("day", "chunk", "hash")
_HASH = re.compile(r"[0-9a-f]{64}")


def day_line_id(day: int, chunk: int, role: str, recipient_id: str | None, correction_id: str | None = None) -> str:
    """The one ID of the day line paying ``recipient_id`` (null for Porto's share) in ``role`` from a day's chunk:
    the freeze's, or with ``correction_id`` the remainder that correction left of it."""
    named = [day, chunk, role, recipient_id] + ([] if correction_id is None else [correction_id])
    return DAY_LINE_ID_PREFIX + domain_hash(DAY_LINE_DOMAIN, named)[:32]


def remainder_line_id(line: Mapping[str, Any]) -> str:
    """The ID the remainder of a day line reversed by a correction has (written only if something remains)."""
    artifact = line["artifact"]
    return day_line_id(artifact["day"], artifact["chunk"], line["role"], line["recipient_id"], line["reversed_by"])


def is_day_line(line: Mapping[str, Any]) -> bool:
    """A line without a budget: a day line (well formed or not, ``line_problems`` says)."""
    return line["budget_id"] is None


def line_budget(line: AllocationLine) -> str:
    """The budget of a line that is not a day line."""
    budget_id = line["budget_id"]
    assert budget_id is not None, f"allocation line {line['line_id']} is a day line, of no budget"
    return budget_id


def line_problems(line: Mapping[str, Any]) -> list[str]:
    """Why ``line`` is neither an ordinary line (a budget, no artifact) nor a well-formed day line; [] if it is one."""
    if not is_day_line(line):
        return ["an allocation line of a budget names no artifact"] if "artifact" in line else []
    if "artifact" not in line:
        return ["a line without a budget must be a day line naming its artifact"]
    artifact = line["artifact"]
    if not isinstance(artifact, dict) or sorted(artifact) != sorted(ARTIFACT_FIELDS):
        return [f"a day line's artifact is {{day, chunk, hash}}, not {artifact!r}"]
    found = [f"artifact {name} {artifact[name]!r} is not a count" for name in ("day", "chunk")
             if type(artifact[name]) is not int or artifact[name] < 0]
    if not isinstance(artifact["hash"], str) or not _HASH.fullmatch(artifact["hash"]):
        found.append(f"artifact hash {artifact['hash']!r} is not a SHA-256 in lowercase hex")
    if line["listener_id"] is not None:
        found.append(f"a day line has no listener, not {line['listener_id']!r}")
    if artifact["day"] != line["day"]:
        found.append(f"day {line['day']!r} is not its artifact's day {artifact['day']!r}")
    if not found:
        derived = day_line_id(artifact["day"], artifact["chunk"], line["role"], line["recipient_id"],
                              line["correction_id"])
        if line["line_id"] != derived:
            found.append(f"its ID is not the derived {derived}")
    return found
