"""Day allocation (finance): ask the ledger's owner to split and freeze days, and set it working."""

from __future__ import annotations

from datetime import date

from django.conf import settings

from ledger_engine.application import day_freeze
from ledger_engine.application.owner import LedgerOwner
from porto_console.console.commands import CommandRequest
from porto_console.console.listing import day_number
from porto_console.ledger import gateway


def request_id_for(command_id: str) -> str:
    return f"day-allocation-{command_id}"


def request(command_id: str, first: date, last: date) -> CommandRequest:
    """AllocateDay for the UTC days from ``first`` to ``last``: no amounts, the owner splits them."""
    return CommandRequest("AllocateDay", {"request_id": request_id_for(command_id), "first_day": day_number(first),
                                          "last_day": day_number(last)})


def start(owner: LedgerOwner, request_id: str) -> None:
    """The owner works the request in this process's background, where the deployment lets it."""
    if settings.DAY_ALLOCATION_IN_BACKGROUND:
        day_freeze.start_in_background(owner, gateway().evidence, request_id)
