"""SIGKILL a ``porto-ledger`` verb at spread-out moments and collect what each kill left at its target."""

from __future__ import annotations

import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable

from tests.support import cli


def killed_part_way(verb: str, source: Path, tmp_path: Path, *, kills: int, seed: int,
                    outcome_of: Callable[[Path], str]) -> list[str]:
    """Run ``porto-ledger VERB SOURCE`` ``kills`` times, each killed somewhere in its own share of a whole run.

    ``outcome_of`` names what a kill left ("none" or "verified"; it fails on anything else). Whatever a
    kill left as "none" must never stand in the way of the next attempt, so that attempt is run whole there.
    """
    started = time.monotonic()
    cli.succeeded(cli.porto_ledger(verb, source, data=tmp_path / f"{verb}-timed"))
    whole = time.monotonic() - started
    chance = random.Random(seed)
    outcomes = []
    for number in range(kills):
        target = tmp_path / f"{verb}-{number}"
        child = cli.spawn(verb, source, data=target, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(whole * (number + chance.random()) / kills)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=cli.CHILD_TIMEOUT_S)
        outcomes.append(outcome_of(target))
        if outcomes[-1] == "none":
            assert cli.succeeded(cli.porto_ledger(verb, source, data=target)).last["ok"] is True
            assert outcome_of(target) == "verified"
    return outcomes
