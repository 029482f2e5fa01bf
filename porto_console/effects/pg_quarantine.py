"""The quarantine in PostgreSQL: parked effects shared by signers on any host and the console.

The PostgreSQL adapter of ``journal_port.QuarantinePort`` (the directory one
is ``quarantine.Quarantine``), selected with the journal by
``PORTO_SIGNER_JOURNAL_URL``: one row per effect in ``porto_quarantine``.
Adding an effect parked already replaces its entry, as the directory's
atomic rename does.
"""

from __future__ import annotations

from psycopg import sql
from psycopg.types.json import Jsonb

from ledger_engine.open_json import Report
from porto_console.effects.pg_schema import QUARANTINE_TABLE, Database
from porto_console.effects.quarantine import checked_effect_id, new_entry, readable_entry

TABLE = sql.Identifier(QUARANTINE_TABLE)


class PostgresQuarantine:
    def __init__(self, url: str) -> None:
        self.database = Database(url)

    def add(self, effect_id: str, kind: str, reason: str, retries: int, *,
            cause: str = "refused rule") -> Report:
        entry = new_entry(checked_effect_id(effect_id), kind, reason, retries, cause)
        with self.database.transaction() as connection:
            connection.execute(
                sql.SQL("INSERT INTO {} (effect_id, entry, quarantined_at_ms) VALUES (%s, %s, %s) "
                        "ON CONFLICT (effect_id) DO UPDATE SET entry = EXCLUDED.entry, "
                        "quarantined_at_ms = EXCLUDED.quarantined_at_ms").format(TABLE),
                (effect_id, Jsonb(entry), entry["quarantined_at_ms"]))
        return entry

    def contains(self, effect_id: str) -> bool:
        with self.database.transaction() as connection:
            return connection.execute(sql.SQL("SELECT 1 FROM {} WHERE effect_id = %s").format(TABLE),
                                      (checked_effect_id(effect_id),)).fetchone() is not None

    def entries(self) -> list[Report]:
        """Every quarantined effect, oldest first."""
        with self.database.transaction() as connection:
            rows = connection.execute(sql.SQL("SELECT effect_id, entry FROM {} ORDER BY quarantined_at_ms, effect_id")
                                      .format(TABLE)).fetchall()
        return [readable_entry(entry, effect_id) for effect_id, entry in rows]

    def release(self, effect_id: str) -> Report | None:
        """Take an effect out of quarantine; returns its entry, or None if it was not there."""
        with self.database.transaction() as connection:
            row = connection.execute(sql.SQL("DELETE FROM {} WHERE effect_id = %s RETURNING entry").format(TABLE),
                                     (checked_effect_id(effect_id),)).fetchone()
        return None if row is None else row[0]
