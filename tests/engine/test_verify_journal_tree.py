"""``verify`` checks every stored journal tree node against the tree the journal makes, not only its frontier.

The tree keeps nodes from level 4 up in ``meta`` (docs/adr/0057). A node under the frontier is read as stored
by the proofs and by ``check_journal_claim``, which decides whether a commitment's claimed root is this
journal's: a forged one would let the owner accept a commitment naming a root the journal never had.
"""

from __future__ import annotations

from typing import Callable

import pytest

from ledger_engine.application.journal_tree import BLOCK, STORED_FROM_LEVEL, node_key, node_value
from ledger_engine.storage.head import read_head
from ledger_engine.layout import META
from ledger_engine.storage.rocks import RocksStore
from tests.support import cli

FORGED = bytes.fromhex("ab" * 32)


def _forge_first_block(store: RocksStore) -> bytes:
    """The node over entries 1..16, under the frontier, names another root."""
    store.write([(META, node_key(STORED_FROM_LEVEL, 0), node_value(FORGED))])
    return node_key(STORED_FROM_LEVEL, 0)


def _delete_first_block(store: RocksStore) -> bytes:
    store.write([(META, node_key(STORED_FROM_LEVEL, 0), None)])
    return node_key(STORED_FROM_LEVEL, 0)


def _add_node_past_the_end(store: RocksStore) -> bytes:
    """A node over two blocks whose second the journal has not filled."""
    key = node_key(STORED_FROM_LEVEL + 1, read_head(store).sequence // BLOCK // 2)
    store.write([(META, key, node_value(FORGED))])
    return key


DAMAGE: dict[str, Callable[[RocksStore], bytes]] = {
    "forged node": _forge_first_block,
    "deleted node": _delete_first_block,
    "node past the end": _add_node_past_the_end,
}


@pytest.mark.parametrize("case", DAMAGE, ids=list(DAMAGE))
def test_verify_refuses_a_stored_tree_that_is_not_the_one_its_journal_makes(stopped_ledger, case):
    with RocksStore(stopped_ledger) as store:
        assert read_head(store).sequence >= 3 * BLOCK
        key = DAMAGE[case](store)

    run = cli.porto_ledger("verify", data=stopped_ledger)
    assert run.status == 1, f"verify passed a ledger with a {case} in its tree, {META}/{key.decode()}: {run.last}"
    assert run.last["code"] == "VERIFICATION_FAILED" and run.last["item"].startswith(f"{META}/merkle/node/"), run.last

