"""The django-hordak peer: a deposit is ``transfer_to`` from funding available to treasury, in PostgreSQL.

Run as ``python -m benchmarks.peer_hordak`` by the ``peers`` benchmark, with
its own Django settings (benchmarks/peer_hordak_settings.py) and database.
Each deposit is one hordak ``Transaction`` with its two ``Leg`` rows (hordak's
triggers check at commit that they balance); the deposit's reference and
evidence are the transaction's description, about the bytes the engine keeps.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal

SETTINGS = "benchmarks.peer_hordak_settings"
CURRENCY = "USD"


class HordakPeer:
    def __init__(self) -> None:
        from django.db import connection, transaction
        from hordak.models import Account, AccountType, Leg, Transaction
        from moneyed import Money

        self.connection, self.atomic = connection, transaction.atomic
        self.Account, self.AccountType, self.Leg, self.Transaction, self.Money = (
            Account, AccountType, Leg, Transaction, Money)

    def reset(self) -> None:
        from django.core.management import call_command

        with self.connection.cursor() as cursor:
            cursor.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        call_command("migrate", verbosity=0, interactive=False)
        self.treasury = self.Account.objects.create(name="treasury", code="1", type=self.AccountType.asset,
                                                    currencies=[CURRENCY])
        self.funding = self.Account.objects.create(name="funding_available", code="2",
                                                   type=self.AccountType.liability, currencies=[CURRENCY])

    def durability(self) -> dict[str, str]:
        from benchmarks.peer_harness import durability

        def show(name: str) -> str:
            with self.connection.cursor() as cursor:
                cursor.execute(f"SHOW {name}")
                return cursor.fetchone()[0]

        return durability(show)

    def record(self, batch, per_commit: int) -> None:
        for start in range(0, len(batch), per_commit):
            with self.atomic():
                for deposit in batch[start:start + per_commit]:
                    self.funding.transfer_to(self.treasury, self._money(deposit.amount),
                                             description=json.dumps(deposit.as_dict(), separators=(",", ":")))

    def stored(self) -> dict[str, int]:
        legs = self.Leg.objects.filter(account=self.treasury)
        debited = sum(leg.debit.amount for leg in legs)
        return {"transactions": self.Transaction.objects.count(), "legs": self.Leg.objects.count(),
                "treasury_debited": int(debited * 1_000_000)}

    def _money(self, micro_units: int):
        return self.Money(Decimal(micro_units) / 1_000_000, CURRENCY)


def main() -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS
    import django

    django.setup()
    from benchmarks.peer_harness import serve

    serve(HordakPeer())


if __name__ == "__main__":
    main()
