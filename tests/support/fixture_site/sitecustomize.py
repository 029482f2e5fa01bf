"""Gives a process the test-only commands (``tests/support/fixture_commands.py``) for its whole life.

A test puts this directory first on ``PYTHONPATH`` of a process that replays a
history the tests made with those commands, such as a recovery, which re-executes
every journalled command: the rules that made a history are the rules that replay it.
"""

from tests.support.fixture_commands import register_fixture_commands

register_fixture_commands()
