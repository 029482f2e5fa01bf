"""The eventsourcing peer: a deposit is a new ``FundingLot`` aggregate, its one event stored in PostgreSQL.

Run as ``python -m benchmarks.peer_eventsourcing`` by the ``peers`` benchmark,
on eventsourcing's own PostgreSQL persistence (``eventsourcing.postgres``) in
its own database. One per commit saves each new aggregate alone; 64 per commit
saves 64 new aggregates in one ``Application.save``, one database transaction.
The aggregate's id is derived from the lot id, so a lot imported twice would
collide, as the engine's unique claim refuses it.
"""

from __future__ import annotations

import os
import uuid
from urllib.parse import urlsplit

import psycopg
from eventsourcing.application import Application
from eventsourcing.domain import Aggregate, event

from benchmarks.peer_harness import DATABASE_URL_VARIABLE, Deposit, durability, serve

LOT_NAMESPACE = uuid.UUID("6f1c1c52-3c71-4c57-9f4c-8d1f1d1f0a15")


class FundingLot(Aggregate):
    @staticmethod
    def create_id(lot_id: str, **_: object) -> uuid.UUID:
        return uuid.uuid5(LOT_NAMESPACE, lot_id)

    @event("Imported")
    def __init__(self, lot_id: str, asset: str, amount: int, deposit: dict) -> None:
        self.lot_id, self.asset, self.amount, self.deposit = lot_id, asset, amount, deposit


class Funding(Application):
    pass


def _environment(url: str) -> dict[str, str]:
    parts = urlsplit(url)
    return {"PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_DBNAME": parts.path.lstrip("/"),
            "POSTGRES_HOST": parts.hostname or "127.0.0.1", "POSTGRES_PORT": str(parts.port or 5432),
            "POSTGRES_USER": parts.username or "postgres", "POSTGRES_PASSWORD": parts.password or ""}


def _lot(deposit: Deposit) -> FundingLot:
    details = deposit.as_dict()
    return FundingLot(lot_id=details.pop("lot_id"), asset="USDC", amount=details.pop("amount"), deposit=details)


class EventsourcingPeer:
    def __init__(self, url: str) -> None:
        self.url = url
        self.app: Funding | None = None

    def reset(self) -> None:
        if self.app is not None:
            self.app.close()
        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute("DROP SCHEMA public CASCADE")
            connection.execute("CREATE SCHEMA public")
        self.app = Funding(env=_environment(self.url))

    def durability(self) -> dict[str, str]:
        def show(name: str) -> str:
            with self.app.recorder.datastore.transaction(commit=False) as cursor:
                cursor.execute(f"SHOW {name}")
                return next(iter(cursor.fetchone().values()))

        return durability(show)

    def record(self, batch: list[Deposit], per_commit: int) -> None:
        for start in range(0, len(batch), per_commit):
            self.app.save(*(_lot(deposit) for deposit in batch[start:start + per_commit]))

    def stored(self) -> dict[str, int]:
        table = self.app.recorder.events_table_name
        with self.app.recorder.datastore.transaction(commit=False) as cursor:
            cursor.execute(f"SELECT count(*) AS events, count(DISTINCT originator_id) AS lots FROM {table}")
            return dict(cursor.fetchone())


def main() -> None:
    serve(EventsourcingPeer(os.environ[DATABASE_URL_VARIABLE]))


if __name__ == "__main__":
    main()
