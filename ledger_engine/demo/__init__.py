"""The deterministic, fixture-labelled demo scenario behind ``porto-ledger demo-envelopes``.

Every ID starts with ``demo-`` or comes from the seeded generator, every digest
is derived from the word ``fixture``, and the console labels the data DEMO DATA.
"""

from __future__ import annotations


from ledger_engine.demo.builder import DEMO_STEP_UP_PUBLIC_KEY, DemoBuilder
from ledger_engine.demo.foundation import build_foundation
from ledger_engine.demo.money import build_money
from ledger_engine.demo.observe import observe_streaming
from ledger_engine.demo.streaming import build_streaming
from ledger_engine.genesis import default_genesis
from ledger_engine.open_json import Document, Unvalidated

DEMO_LABEL = "DEMO DATA - fixture scenario, no real money"


def demo_genesis() -> Document:
    return default_genesis(label=DEMO_LABEL, step_up_public_key=DEMO_STEP_UP_PUBLIC_KEY)


def demo_envelopes(seed: int, *, listeners: int = 20, days: int = 3) -> list[Unvalidated]:
    return demo_scenario(seed, listeners=listeners, days=days).envelopes


def demo_scenario(seed: int, *, listeners: int = 20, days: int = 3) -> DemoBuilder:
    """The scenario's envelopes, and the evidence bytes they name that a loader stores (``builder.evidence``)."""
    builder = DemoBuilder(seed)
    cast = build_foundation(builder, listeners=listeners, days=days)
    build_streaming(builder, cast, days=days)
    observe_streaming(cast, builder.envelopes, demo_genesis())
    build_money(builder, cast, days=days)
    return builder
