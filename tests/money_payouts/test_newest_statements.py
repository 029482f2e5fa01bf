"""A recipient's newest confirmed statement is the one its latest index froze, whatever its random ID: the prepare
screen links it and an approval cites it (``payout_queries.newest_confirmed_statements``)."""

from __future__ import annotations

from typing import Iterator

from ledger_engine.domain.view import Record
from ledger_engine.selectors.payout_queries import newest_confirmed_statements


class Statements:
    """The statement and batch records a view holds, each a record of revision 1."""

    def __init__(self, statements: list[dict], batches: dict[str, str]) -> None:
        self.statements = statements
        self.batches = batches  # index batch ID -> its state

    def records(self, prefix: str) -> Iterator[tuple[str, Record]]:
        assert prefix == "statement/"
        for statement in sorted(self.statements, key=lambda statement: statement["statement_id"]):
            yield f"statement/{statement['statement_id']}", Record(1, statement)

    def record(self, key: str) -> Record | None:
        state = self.batches.get(key.removeprefix("batch/"))
        return Record(1, {"state": state}) if state is not None else None


def statement(statement_id: str, index: str, sequence: int, recipient: str = "artist-a") -> dict:
    return {"statement_id": statement_id, "recipient_id": recipient, "index_batch_id": index,
            "created": {"command_id": f"command-{sequence}", "sequence": sequence, "at_ms": sequence}}


def test_the_newest_statement_is_the_latest_index_s_not_the_last_id_in_key_order():
    view = Statements([statement("statement-f0", "index-1", 10), statement("statement-0a", "index-2", 20)],
                      {"index-1": "confirmed", "index-2": "confirmed"})
    assert newest_confirmed_statements(view) == {"artist-a": "statement-0a"}


def test_a_statement_of_an_index_not_confirmed_is_not_offered():
    view = Statements([statement("statement-0a", "index-1", 10), statement("statement-f0", "index-2", 20),
                       statement("statement-55", "index-2", 20, recipient="artist-b")],
                      {"index-1": "confirmed", "index-2": "frozen"})
    assert newest_confirmed_statements(view) == {"artist-a": "statement-0a"}
