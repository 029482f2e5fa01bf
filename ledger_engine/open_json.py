"""The JSON objects the engine leaves open, each named for why no record type holds it.

A record the rules read and write is a ``TypedDict`` of ``domain/schema/``; a selector's answer is a frozen
dataclass where it can be. An object that stays open takes one of these names instead of ``dict[str, Any]``, so
its annotation says who owns its shape (``tests/test_open_json.py`` keeps the bare spelling out of every other
module). Each is a plain alias: nothing changes at run time, and a value passes between two of them as before.
"""

from __future__ import annotations

from typing import Any, TypeAlias

JsonObject: TypeAlias = dict[str, Any]  # of any shape: a helper's over all JSON, or what another program prints
Unvalidated: TypeAlias = dict[str, Any]  # an envelope, payload or variables: the pydantic model reading it owns it
CommandResult: TypeAlias = dict[str, Any]  # what a rule answers, journalled as its entry's result: its rule owns it
JournalEvent: TypeAlias = dict[str, Any]  # an event as journalled: its type picks its fields, its rule writes them
RecordData: TypeAlias = dict[str, Any]  # a record's data (or part) typed only by its key or kind: docs/records/
IndexValue: TypeAlias = dict[str, Any]  # an index entry's value: the projection that writes it owns its shape
Document: TypeAlias = dict[str, Any]  # a file of a specified format (genesis, export, proof): its checker owns it
Report: TypeAlias = dict[str, Any]  # an answer shown to a person or printed: the function building it owns it
