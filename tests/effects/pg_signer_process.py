"""One signer process for the two-signer test: signs every payment of a run through the PostgreSQL journal.

    python -m tests.effects.pg_signer_process URL PAYMENTS TTL_SECS SEED

It prints ``ready`` once connected, ``signing`` when it is about to sign
inside the journal's transaction and ``signed`` once that is committed (so
the test can tell a kill that landed mid-signing), then goes over the payments in its own
order, keeping each one's transaction while it has not expired (by the wall
clock, standing in for chain time) and signing a new one otherwise, each
signature a little slow, so a kill from outside lands while signing. There
is no chain: its next sequence stays 0, so every sequence comes from the
journal.
"""

from __future__ import annotations

import random
import sys
import time

from aptos_sdk.ed25519 import PrivateKey

from porto_console.effects.pg_journal import PostgresPaymentJournal
from porto_console.effects.signer import Signer
from tests.effects.conftest import PAYER_KEY, terms

SIGNING_SECS = 0.4  # slow enough that the kills land while payments are left to sign


def payment_ids(count: int) -> list[str]:
    return [f"run-9.payment-{number}" for number in range(count)]


def main(url: str, payments: int, ttl_secs: int, seed: int) -> None:
    signer = Signer(PrivateKey.from_str(PAYER_KEY, strict=False))
    journal = PostgresPaymentJournal(url)
    journal.last_for("none")
    print("ready", flush=True)
    order = payment_ids(payments)
    random.Random(seed).shuffle(order)
    for payment_id in order:
        sign_one(journal, signer, payment_id, ttl_secs)


def sign_one(journal: PostgresPaymentJournal, signer: Signer, payment_id: str, ttl_secs: int) -> None:
    chain_time = int(time.time())

    def sign(sequence: int):
        print("signing", flush=True)
        time.sleep(SIGNING_SECS)
        return signer.sign(terms(signer, sequence, expiration_secs=chain_time + ttl_secs))

    journal.sign_next(payment_id=payment_id, effect_id=f"{payment_id}.effect", worker_id="payments-worker-1",
                      sender=signer.address, chain_sequence=0, chain_time_secs=chain_time,
                      reuse=lambda last: last.expiration_secs > int(time.time()), sign=sign,
                      now_ms=time.time_ns() // 1_000_000)
    print("signed", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
