"""A day line's parts: the listener-days of its frozen chunk it is made of, as a document its recipient checks.

A day line (docs/adr/0073) pays one recipient in one role their lines over a
chunk of at most 2,500 listener-days. Its *parts* are the listener-days of the
chunk the recipient has a part in, each named by its position in the chunk (its
0-based line number: never the listener, whom a recipient must not learn), with
the recipient's lines of it in that role: the work or node each line pays for,
and its amount. A remainder day line (corrections took listener-days out of the
freeze's line) is made of the chunk's parts less the listener-days the
corrections of its chain took out.

The parts document, in canonical JSON (RFC 8785), parts in position order:

    {"version": "porto:london:day-line-parts:v1",
     "day_line": {"line_id", "artifact": {"day", "chunk", "hash"}, "role", "recipient_id", "amount"},
     "count": 2, "parts": [{"position": 17, "lines": [{"work_id": "work-1", "amount": "1250"}]}, …]}

Its digest is ``hex(SHA-256(UTF8(PARTS_DOMAIN) || JCS(document)))``; a
statement line of a day line commits to ``{"count", "digest"}`` (docs/merkle.md).
This module computes parts from a chunk's bytes; it reads no ledger.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, Mapping

import orjson

from ledger_engine.amounts import checked_sum, parse_amount
from ledger_engine.canonical import domain_hash
from ledger_engine.open_json import Document

PARTS_VERSION = "porto:london:day-line-parts:v1"
PARTS_DOMAIN = PARTS_VERSION + "\n"
PARTS_FILE_FIELDS = ("version", "day_line", "count", "parts")
DAY_LINE_FIELDS = ("line_id", "artifact", "role", "recipient_id", "amount")
ARTIFACT_FIELDS = ("day", "chunk", "hash")
PART_FIELDS = ("position", "lines")
# What each role's line is earned by: a work's rights, a node's serving; Porto's retained share by neither.
REFERENCE_BY_ROLE = {"artist": "work_id", "operator": "node_id", "porto": None}

RecipientKey = tuple[str, str | None]  # (role, recipient ID)


class ChunkParts:
    """A chunk's listener-days by (role, recipient): each one's position and that recipient's lines in that role.

    Built once per chunk, so every day line of the chunk reads its bytes once.
    """

    def __init__(self, content: bytes) -> None:
        self._by_recipient: dict[RecipientKey, list[tuple[str, Document]]] = defaultdict(list)
        for position, encoded in enumerate(content.splitlines()):
            listener_day = orjson.loads(encoded)
            for key, lines in _lines_by_recipient(listener_day["lines"]).items():
                self._by_recipient[key].append((listener_day["listener_id"], {"position": position, "lines": lines}))

    def of(self, role: str, recipient_id: str | None, taken_out: frozenset[str] = frozenset()) -> list[Document]:
        """The parts of (role, recipient) in position order, without the listener-days ``taken_out`` names."""
        return [part for listener_id, part in self._by_recipient.get((role, recipient_id), ())
                if listener_id not in taken_out]


def _lines_by_recipient(lines: Iterable[Mapping[str, Any]]) -> dict[RecipientKey, list[Document]]:
    grouped: dict[RecipientKey, list[Document]] = defaultdict(list)
    for line in lines:
        grouped[(line["role"], line["recipient_id"])].append(part_line(line))
    return grouped


def part_line(line: Mapping[str, Any]) -> Document:
    """An artifact line as its recipient sees it: what earned it (work or node) and its amount."""
    reference = REFERENCE_BY_ROLE[line["role"]]
    return {"amount": line["amount"]} if reference is None else {reference: line[reference], "amount": line["amount"]}


def parts_document(day_line: Mapping[str, Any], parts: list[Document]) -> Document:
    """The parts document of ``day_line`` (an allocation line record, or a statement's day line with its recipient)."""
    return {"version": PARTS_VERSION, "day_line": {name: day_line[name] for name in DAY_LINE_FIELDS},
            "count": len(parts), "parts": parts}


def parts_digest(document: Mapping[str, Any]) -> str:
    return domain_hash(PARTS_DOMAIN, document)


def commitment(document: Mapping[str, Any]) -> Document:
    """What a statement line of the day line carries: ``{"count", "digest"}``."""
    return {"count": document["count"], "digest": parts_digest(document)}


def parts_total(parts: Iterable[Mapping[str, Any]]) -> int:
    """The sum of every line of ``parts``, in minor units."""
    return checked_sum(parse_amount(line["amount"]) for part in parts for line in part["lines"])
