"""overlay_scan: a sorted scan with pending changes laid over it, equal to merging in memory."""

from __future__ import annotations

from hypothesis import given, strategies as st

from ledger_engine.ordered import overlay_scan

keys = st.text(alphabet="abcdef", min_size=1, max_size=4)


@given(st.dictionaries(keys, st.integers()), st.dictionaries(keys, st.none() | st.integers()))
def test_overlay_scan_equals_the_in_memory_merge(base, overlay):
    expected = {**base, **overlay}
    merged = list(overlay_scan(sorted(base.items()), overlay))
    assert merged == sorted((key, value) for key, value in expected.items() if value is not None)


def test_resolve_turns_overlay_keys_into_values():
    merged = overlay_scan([("a", 1), ("c", 3)], {"b": "raw", "c": None, "d": "raw"},
                          lambda key: None if key == "c" else key.upper())
    assert list(merged) == [("a", 1), ("b", "B"), ("d", "D")]
