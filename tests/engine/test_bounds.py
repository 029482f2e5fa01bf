"""Command bounds (docs/spec/engine-and-journal.md §3): at most 10,000 state writes and 16 MiB of canonical delta per command."""

from __future__ import annotations

import rfc8785

from ledger_engine.application.transition import MAX_DELTA_BYTES, MAX_STATE_WRITES
from ledger_engine.layout import COMMAND_RESULT, STATE
from tests.engine.conftest import bulk_key
from tests.support import seed000
from tests.support.outcomes import assert_rejected
from tests.support.store import owner_dump


def assert_too_large_without_mutation(owner, envelopes, bulk_command, **payload):
    assert_rejected(owner, envelopes(bulk_command, payload), "COMMAND_TOO_LARGE")


def test_ten_thousand_state_writes_are_accepted(owner, envelopes, bulk_command):
    assert owner.submit(envelopes(bulk_command, {"records": MAX_STATE_WRITES})).accepted
    assert owner.get(STATE, bulk_key(MAX_STATE_WRITES - 1)).revision == 1


def test_more_than_ten_thousand_state_writes_are_too_large(owner, envelopes, bulk_command):
    assert_too_large_without_mutation(owner, envelopes, bulk_command, records=MAX_STATE_WRITES + 1)


def test_outbox_intents_count_as_state_writes(owner, envelopes, bulk_command):
    assert_too_large_without_mutation(owner, envelopes, bulk_command, records=MAX_STATE_WRITES - 1, effects=2)


def test_a_delta_over_sixteen_mebibytes_is_too_large(owner, envelopes, bulk_command):
    assert_too_large_without_mutation(owner, envelopes, bulk_command, records=17, pad_bytes=1024 * 1024)


def canonical_delta_size(owner, command_id: str) -> int:
    """The length of the JCS delta of a one-record bulk command, rebuilt from the stored rows."""
    dump = owner_dump(owner)
    rows = [(COMMAND_RESULT, command_id.encode(), dump[COMMAND_RESULT][command_id.encode()]),
            (STATE, bulk_key(0).encode(), dump[STATE][bulk_key(0).encode()])]
    return len(rfc8785.dumps(seed000.ordered_rows(rows)))


def test_the_delta_limit_is_exactly_sixteen_mebibytes(owner, envelopes, bulk_command):
    """Commands 1 to 3 differ only in padding, so their deltas differ by exactly the padding."""
    probe_pad = MAX_DELTA_BYTES - 4096
    probe = envelopes(bulk_command, {"records": 1, "pad_bytes": probe_pad})
    assert owner.submit(probe).accepted
    exact_pad = probe_pad + MAX_DELTA_BYTES - canonical_delta_size(owner, probe["command_id"])

    at_limit = envelopes(bulk_command, {"records": 1, "pad_bytes": exact_pad})
    assert owner.submit(at_limit).accepted
    assert canonical_delta_size(owner, at_limit["command_id"]) == MAX_DELTA_BYTES

    assert_too_large_without_mutation(owner, envelopes, bulk_command, records=1, pad_bytes=exact_pad + 1)
    assert owner.get(STATE, bulk_key(0)).revision == 2
