"""Every stored streaming record has exactly the fields, and the kinds of value, of its type in schema/streaming.py.

The rules run for real (billing, the catalogue, nodes, sessions, closing days) until each record type is stored
in each of its states, and each record is compared with its ``TypedDict``, nested entries included, so a field a
rule adds, drops or renames, or a state outside a ``Literal``, fails here rather than drifting from its type.
"""

from __future__ import annotations

import types
from typing import Any, Literal, NotRequired, Required, Union, get_args, get_origin, get_type_hints, is_typeddict

import pytest

from ledger_engine.adapters.signatures import public_key_hex
from ledger_engine.domain.schema import streaming as schema
from tests.streaming.conftest import DAY, INGEST, node_key_for
from tests.support import payloads

# State prefix -> the record type stored under it.
RECORD_TYPES: dict[str, type] = {
    "period/": schema.Period,
    "work/": schema.Work,
    "rendition/": schema.Rendition,
    "rights/": schema.RightsVersion,
    "node/": schema.Node,
    "node_health/": schema.NodeHealth,
    "listener_activity/": schema.ListenerActivity,
    "listener_day/": schema.ListenerDay,
    "session/": schema.Session,
    "grant/": schema.Grant,
    "receipt/": schema.Receipt,
    "decision/": schema.Decision,
}
# Record types whose every state the scenario reaches: field -> every value the type allows.
STATES = {
    "period/": {"entitlement": {"active", "cancelled"}, "clearance": {"pending", "cleared", "refunded"}},
    "work/": {"status": {"imported", "active", "withdrawn"}},
    "node/": {"status": {"pending", "active", "suspended", "retired"}},
    "node_health/": {"status": {"healthy", "degraded", "unreachable"}},
}
EVIDENCE = "ee" * 32


def mismatches(value: Any, hint: Any, path: str) -> list[str]:
    """How ``value`` differs from the type ``hint``: missing or untyped keys, and values of another kind."""
    if hint is Any:
        return []
    if is_typeddict(hint):
        if type(value) is not dict:
            return [f"{path}: {value!r} is not an object"]
        fields = get_type_hints(hint)
        found = [f"{path}: missing {name}" for name in sorted(hint.__required_keys__ - value.keys())]
        found += [f"{path}: untyped {name}" for name in sorted(value.keys() - fields.keys())]
        for name in sorted(value.keys() & fields.keys()):
            found += mismatches(value[name], fields[name], f"{path}.{name}")
        return found
    origin, args = get_origin(hint), get_args(hint)
    if origin is Literal:
        fits = any(type(value) is type(allowed) and value == allowed for allowed in args)
        return [] if fits else [f"{path}: {value!r} is not one of {args}"]
    if origin in (Union, types.UnionType):
        return [] if any(not mismatches(value, option, path) for option in args) else [
            f"{path}: {value!r} is none of {hint}"]
    if origin is list:
        if type(value) is not list:
            return [f"{path}: {value!r} is not a list"]
        return [found for index, item in enumerate(value) for found in mismatches(item, args[0], f"{path}[{index}]")]
    if origin is dict:
        if type(value) is not dict:
            return [f"{path}: {value!r} is not an object"]
        return [found for name, item in value.items() for found in mismatches(item, args[1], f"{path}.{name}")]
    if hint is type(None):
        return [] if value is None else [f"{path}: {value!r} is not null"]
    if hint in (str, int, bool):
        return [] if type(value) is hint else [f"{path}: {value!r} is not a {hint.__name__}"]
    raise TypeError(f"{path}: no check for {hint!r}")


def _scenario(world) -> None:
    """Periods in every entitlement and clearance, works in every status, nodes in every status and health,
    listener-days closed with and without sessions, and a session still open."""
    assert world.billing("payment_cleared", period_id="period-1").accepted
    assert world.open_period("period-2", "listener-2").accepted
    assert world.billing("entitlement_cancelled", period_id="period-2", account_id="listener-2").accepted
    assert world.open_period("period-3", "listener-2", first_day=DAY + 30).accepted
    assert world.billing("payment_refunded", period_id="period-3", account_id="listener-2").accepted
    assert world.open_period("period-4", first_day=DAY + 30).accepted

    world.ok("ImportCatalogue", payloads.catalogue("import-work-3", payloads.work("work-3")), actor=INGEST)
    world.work("work-2")
    assert world.submit("DisableWork", {"work_id": "work-2", "reason": "rights_dispute", "evidence_digest": EVIDENCE},
                        actor=INGEST, expected=world.stated(schema.work_key("work-2")), evidence=[EVIDENCE]).accepted
    world.work("work-4")
    assert world.submit("DisableWork", {"work_id": "work-4", "reason": "takedown_notice", "evidence_digest": EVIDENCE},
                        actor=INGEST, expected=world.stated(schema.work_key("work-4")), evidence=[EVIDENCE]).accepted
    world.ok("ActivateWork", payloads.rights("work-4", {"artist-1": 10_000}, version=2), actor=INGEST)

    world.admit("node-2")
    world.active_node("node-3", "operator-2")
    assert _rotate(world, "node-3", 2, reason="compromised", compromised_since_ms=world.now).accepted
    assert _rotate(world, "node-3", 3, valid_from_ms=world.now + 120_000).accepted
    assert world.health("node-3", status="degraded").accepted
    assert world.set_status("node-3", "suspended", "health_failure").accepted
    world.active_node("node-4", "operator-2")
    assert world.health("node-4", status="unreachable").accepted
    assert world.set_status("node-4", "retired", "decommissioned").accepted

    world.listen(chunks=3)
    world.listen(chunks=1)
    world.next_day()
    assert world.close_day().accepted
    assert world.close_day("listener-2", period_id="period-2").accepted
    world.session()


def _rotate(world, node_id: str, version: int, *, reason: str = "scheduled", valid_from_ms: int | None = None,
            compromised_since_ms: int | None = None):
    payload = {"node_id": node_id, "version": version, "public_key": public_key_hex(node_key_for(node_id, version)),
               "valid_from_ms": world.now + 60_000 if valid_from_ms is None else valid_from_ms, "reason": reason,
               "evidence_digest": "cd" * 32}
    if compromised_since_ms is not None:
        payload["compromised_since_ms"] = compromised_since_ms
    return world.submit("RotateNodeKey", payload, actor=INGEST, expected=world.stated(schema.node_key(node_id)),
                        evidence=["cd" * 32])


def _stored(world) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    view = world.owner.view()
    return {prefix: [(record_key, record.data) for record_key, record in view.records(prefix)]
            for prefix in RECORD_TYPES}


def test_every_stored_record_has_exactly_its_types_fields(world):
    _scenario(world)
    stored = _stored(world)
    assert [prefix for prefix, records in stored.items() if not records] == []
    assert [found for prefix, records in stored.items() for record_key, data in records
            for found in mismatches(data, RECORD_TYPES[prefix], record_key)] == []


def test_the_scenario_reaches_every_state_the_types_allow(world):
    _scenario(world)
    stored = _stored(world)
    seen = {prefix: {field: {data[field] for _, data in stored[prefix]} for field in fields}
            for prefix, fields in STATES.items()}
    assert seen == STATES
    periods = {data["period_id"]: data for _, data in stored["period/"]}
    assert {entry["kind"] for period in periods.values() for entry in period["events"]} == set(
        get_args(schema.BillingKind))
    node = {data["node_id"]: data for _, data in stored["node/"]}["node-3"]
    assert [entry["ended_by"] for entry in node["key_versions"]] == ["compromised", "scheduled", None]
    works = {data["work_id"]: data for _, data in stored["work/"]}
    assert ("last_withdrawal" in works["work-4"], works["work-4"]["status"]) == (True, "active")
    days = {data["listener_id"]: data for _, data in stored["listener_day/"]}
    assert [session["eligible"] for session in days["listener-1"]["sessions"]] == [True, False]
    assert (days["listener-2"]["sessions"], days["listener-2"]["activity_revision"]) == ([], None)
    windows = [window for _, data in stored["listener_activity/"] for window in data["sessions"]]
    assert None in [window["closed_at_ms"] for window in windows]


def test_the_check_finds_a_drifted_record():
    window = {"session_id": "session-1", "opened_at_ms": 1, "closed_at_ms": None}
    activity = {"listener_id": "listener-1", "day": "1", "sessions": [{**window, "closed": True}], "extra": 0}
    assert mismatches(activity, schema.ListenerActivity, "a") == [
        "a: untyped extra", "a.day: '1' is not a int", "a.sessions[0]: untyped closed"]
    assert mismatches({**window, "opened_at_ms": True}, schema.SessionWindow, "w") == [
        "w.opened_at_ms: True is not a int"]
    health = {"node_id": "n", "report_id": "r", "status": "asleep", "observed_at_ms": 1, "recorded_at_ms": 1}
    assert mismatches(health, schema.NodeHealth, "h") == [
        "h: missing inventory", "h.status: 'asleep' is not one of ('healthy', 'degraded', 'unreachable')"]


@pytest.mark.parametrize("record_type", [value for value in vars(schema).values() if is_typeddict(value)],
                         ids=lambda record_type: record_type.__name__)
def test_required_keys_are_what_each_type_declares(record_type):
    """Python 3.11 counts ``NotRequired`` among ``__required_keys__`` under postponed annotations; none is used."""
    hints = get_type_hints(record_type, include_extras=True)
    assert [name for name, hint in hints.items() if get_origin(hint) in (NotRequired, Required)] == []
    assert record_type.__required_keys__ | record_type.__optional_keys__ == hints.keys()
