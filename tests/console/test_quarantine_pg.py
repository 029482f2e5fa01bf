"""The quarantine screen reads the signer database when the workers park effects there (PORTO_SIGNER_JOURNAL_URL)."""

from __future__ import annotations

import pytest
from psycopg import sql
from psycopg.types.json import Jsonb

from ledger_engine.layout import INDEXES, OUTBOX
from porto_console.console.handles import seal
from porto_console.effects.pg_quarantine import PostgresQuarantine
from porto_console.effects.pg_schema import QUARANTINE_TABLE
from porto_console.effects.quarantine import Quarantine
from tests.effects import journal_adapters


@pytest.fixture
def parked(ledger, settings, tmp_path, postgres_database_url) -> tuple[PostgresQuarantine, str]:
    """One outbox effect parked in PostgreSQL; the console's directory quarantine stays empty."""
    settings.SIGNER_JOURNAL_URL = journal_adapters.emptied("postgres", tmp_path, postgres_database_url)
    quarantine = PostgresQuarantine(settings.SIGNER_JOURNAL_URL)
    index_key, _ = ledger.scan(INDEXES, "effect_by_status/", limit=1)[0]
    effect_id = index_key.rsplit("/", 1)[1]
    quarantine.add(effect_id, ledger.get(OUTBOX, effect_id).data["kind"], "Poison: refused on another host", 3)
    return quarantine, effect_id


def test_the_screen_lists_and_releases_effects_parked_in_postgres(client_as, parked, settings):
    quarantine, effect_id = parked
    Quarantine(settings.QUARANTINE_DIR).add("left-in-the-directory", "payment.transfer", "not read", 0)
    page = client_as("ops").get("/ledger/quarantine/").content.decode()
    assert effect_id in page and "Poison: refused on another host" in page
    assert "left-in-the-directory" not in page
    released = client_as("ops").post(f"/ledger/quarantine/{seal('effect', effect_id)}/retry/", follow=True)
    assert "released: the next sweep sends it" in released.content.decode()
    assert not quarantine.contains(effect_id)


def test_a_row_written_by_hand_is_listed_as_damaged_beside_the_others(client_as, parked):
    quarantine, effect_id = parked
    with quarantine.database.transaction() as connection:
        connection.execute(sql.SQL("INSERT INTO {} (effect_id, entry, quarantined_at_ms) VALUES (%s, %s, 0)").format(
            sql.Identifier(QUARANTINE_TABLE)), ("hand-written.effect", Jsonb({"effect_id": "hand-written.effect"})))
    response = client_as("ops").get("/ledger/quarantine/")
    page = response.content.decode()
    assert response.status_code == 200 and effect_id in page
    assert "hand-written.effect: kind is missing or not str" in page and 'class="damaged"' in page
