"""The console's settings for the test suite: the real ones, plus the keys a deployment must provide.

A real console refuses to serve without its own handle key and a step-up key its
ledger trusts (porto_console/console/safety.py); tests use labelled test keys.
"""

import tempfile
from pathlib import Path

from porto_console.settings import *  # noqa: F403
from porto_console.settings import LOGGING

from ledger_engine.demo import demo_genesis
from ledger_engine.demo.builder import DEMO_IDENTITY_KEY
from ledger_engine.genesis import genesis_hash
from tests.merkle import checkpoint_keys
from tests.support.step_up import PRIVATE_KEY_HEX

HANDLE_KEY = "porto-test-only-handle-key-for-sealed-urls"
DAY_ALLOCATION_IN_BACKGROUND = False  # the tests run a day allocation's loop themselves, to its end
STEP_UP_KEY = PRIVATE_KEY_HEX
CHECKPOINT_KEY, CHECKPOINT_ORIGIN = checkpoint_keys.SEED_HEX, checkpoint_keys.ORIGIN
IDENTITY_KEY = DEMO_IDENTITY_KEY.decode()  # the console tests' ledgers are copies of the demo's, accounts and all
BACKUP_PASSWORD = "porto-test-only-backup-password"
GENESIS_HASH = genesis_hash(demo_genesis())  # the console tests' ledgers are copies of the demo's
# The rotating log file of this test run, away from the developer's own var/log.
LOG_DIR = Path(tempfile.mkdtemp(prefix="porto-test-logs-"))
LOGGING["handlers"]["file"]["filename"] = LOG_DIR / "console.log"

# Django's advice for test suites: a fast hasher for the passwords tests set, so a test's wait is not a
# million PBKDF2 rounds per password. PBKDF2 stays listed, so a password a real console stored still checks;
# the consoles the launcher tests start in child processes keep the real settings' hashers.
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.MD5PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]
