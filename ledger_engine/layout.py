"""Column families of the ledger and which of them form the logical state."""

from __future__ import annotations

META = "meta"
JOURNAL = "journal"
EVENTS = "events"
STATE = "state"
UNIQUE = "unique"
COMMAND_RESULT = "command_result"
OUTBOX = "outbox"
INDEXES = "indexes"
PRIVATE_AUX = "private_aux"
# Each journal entry's delta (the set operations its delta_hash covers), by sequence; genesis is 0.
DELTAS = "deltas"

ALL_FAMILIES = (META, JOURNAL, EVENTS, STATE, UNIQUE, COMMAND_RESULT, OUTBOX, INDEXES, PRIVATE_AUX, DELTAS)

# Exported as sorted rows and hashed into the logical state digest.
DIGEST_FAMILIES = (COMMAND_RESULT, OUTBOX, STATE, UNIQUE)

# What a rule may write through its changes; events and results are written by the executor.
RULE_WRITABLE_FAMILIES = (STATE, UNIQUE, OUTBOX)

# What a journal entry's delta covers.
DELTA_FAMILIES = (COMMAND_RESULT, EVENTS, OUTBOX, STATE, UNIQUE)

# Versioned records: every value carries its revision.
REVISIONED_FAMILIES = (STATE, UNIQUE, OUTBOX)

VALUE_SCHEMA = 1
