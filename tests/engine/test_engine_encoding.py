"""The commit path's walk-free encoder is RFC 8785 on every value shape it stores (docs/adr/0054)."""

from __future__ import annotations

import ast
from pathlib import Path

import orjson
import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from ledger_engine.storage.value_codec import encode_built_record, encode_built_value, encode_record, encode_value
from ledger_engine.canonical import engine_bytes
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import COMMAND_RESULT, EVENTS, INDEXES, JOURNAL, META, OUTBOX, REVISIONED_FAMILIES, STATE, UNIQUE
from ledger_engine.projections import all_projections
from ledger_engine.projections.maintenance import IndexMaintainer
from ledger_engine.storage.rocks import RocksStore
from tests.engine.test_canonical_properties import ascii_text, safe_integers, stored_values, unsafe_integers

ENGINE = Path(__file__).resolve().parents[2] / "ledger_engine"

ascii_scalars = st.none() | st.booleans() | safe_integers | ascii_text | st.text()
ascii_keyed = st.recursive(ascii_scalars, lambda children: st.lists(children, max_size=6)
                           | st.dictionaries(ascii_text, children, max_size=6), max_leaves=40)


@given(ascii_keyed)
def test_engine_bytes_equal_rfc8785_with_ascii_keys(value):
    assert engine_bytes(value) == rfc8785.dumps(value)


@given(stored_values)
def test_engine_bytes_equal_rfc8785_with_any_keys(value):
    assert engine_bytes(value) == rfc8785.dumps(value)


def test_engine_bytes_sort_keys_by_utf16_code_units():
    value = {"\uff61": 1, "\U0001f600": 2, "a": [{"\uff61": "x", "\U0001f600": "y"}]}
    assert engine_bytes(value) == rfc8785.dumps(value)


@given(st.integers(0, 2**31), stored_values)
def test_built_records_and_values_equal_the_walked_encoders(revision, data):
    record = {"data": data, "kind": "x"}
    assert encode_built_record(revision, record) == encode_record(revision, record) == rfc8785.dumps(
        {"v": 1, "revision": revision, "data": record})
    assert encode_built_value(record) == encode_value(record)


@given(unsafe_integers)
def test_engine_bytes_refuse_unsafe_integers_with_the_stable_code(number):
    for value in ({"count": number}, [1, {"\u00e9": number}]):
        with pytest.raises(LedgerError) as raised:
            engine_bytes(value)
        assert raised.value.code == ErrorCode.INVALID_NUMBER


def test_every_value_the_demo_ledger_stores_is_rfc8785(demo_ledger):
    checked = dict.fromkeys((STATE, UNIQUE, OUTBOX, EVENTS, COMMAND_RESULT, INDEXES, JOURNAL), 0)
    with RocksStore(demo_ledger.data, read_only=True) as store:
        for family in checked:
            for key, raw in store.scan(family):
                assert raw == rfc8785.dumps(orjson.loads(raw)), (family, key)
                checked[family] += 1
        head = store.get(META, b"head")
    assert head == rfc8785.dumps(orjson.loads(head))
    assert all(checked.values()), checked


def test_projections_index_no_record_kind_they_do_not_declare(demo_ledger):
    """The commit path asks a projection only about its declared kinds; any other must give no entry."""
    maintainer = IndexMaintainer()
    asked = 0
    with RocksStore(demo_ledger.data, read_only=True) as store:
        for family in REVISIONED_FAMILIES:
            for key, raw in store.scan(family):
                record_key, data = key.decode(), orjson.loads(raw)["data"]
                declared = maintainer._record_projections(family, record_key)
                for projection in all_projections():
                    if type(projection) not in {type(p) for p in declared}:
                        assert list(projection.record_entries(family, record_key, data)) == [], (family, record_key)
                        asked += 1
    assert asked > 0


def _float_sources(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.Div):
            found.append(f"{path.name}:{node.lineno}: true division")
        elif isinstance(node, ast.Constant) and type(node.value) is float:
            found.append(f"{path.name}:{node.lineno}: float literal")
        elif isinstance(node, ast.Name) and node.id == "float":
            found.append(f"{path.name}:{node.lineno}: float")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [f"{path.name}:{node.lineno}: imports {m}" for m in modules
                      if m.split(".")[0] in {"math", "time", "random", "statistics", "decimal", "fractions"}]
    return found


def test_rules_projections_and_selectors_have_no_way_to_make_a_float():
    """Their values skip the canonical walk that refuses floats, so no float may arise in them at all."""
    sources = [path for folder in ("domain", "projections", "selectors")
               for path in sorted((ENGINE / folder).rglob("*.py"))]
    assert len(sources) > 20
    assert [found for path in sources for found in _float_sources(path)] == []
