"""Fixtures for the effects pipeline: a SIMULATED chain on loopback, a payer key, a funded account."""

from __future__ import annotations

import pytest
from aptos_sdk.ed25519 import PrivateKey

from ledger_engine.adapters.gateway import CommandGateway
from ledger_engine.checkpoint.offsite import ResticRepository
from porto_console.effects.aptos_rest import AptosRestClient
from porto_console.effects.signer import Signer
from porto_console.effects.simulated_chain import SimulatedChain
from porto_console.effects.simulated_server import SimulatedChainServer
from porto_console.effects.transactions import TransferTerms
from tests.effects.redis_server import RedisServer, external_redis_url
from tests.support.sshd import SshServer

USDC = "0x" + "a1" * 32
CHAIN_ID = 4
PAYER_KEY = "0x" + "11" * 32
COMMITTER_KEY = "0x" + "33" * 32
RECIPIENT = "0x" + "cc" * 32


FAULT_CASES = {"passed": 0, "failed": 0}
CAMPAIGNS: list[str] = []  # the seeded fault campaign's result lines


def pytest_configure(config):
    config.addinivalue_line("markers", "fault_case: a process-kill or chain-fault case, counted in the report")


def pytest_runtest_logreport(report):
    if report.when == "call" and "fault_case" in report.keywords:
        FAULT_CASES["passed" if report.passed else "failed"] += 1


def pytest_terminal_summary(terminalreporter):
    for line in CAMPAIGNS:
        terminalreporter.write_line(line)
    if sum(FAULT_CASES.values()):
        terminalreporter.write_line(
            f"effects fault cases run: {sum(FAULT_CASES.values())} "
            f"({FAULT_CASES['passed']} paid or anchored exactly once, {FAULT_CASES['failed']} failed)")


@pytest.fixture(scope="session")
def broker_server(tmp_path_factory):
    """This session's own ``redis-server``, shared by the tests that need a broker (each flushes its database)."""
    if external_redis_url():
        yield None
        return
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def ssh_server(tmp_path_factory):
    """This session's own ``sshd`` on a free loopback port: the off-host end of SFTP backup repositories."""
    server = SshServer(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


@pytest.fixture
def broker_url(broker_server) -> str:
    return external_redis_url() or broker_server.url(11)


@pytest.fixture
def chain_server():
    server = SimulatedChainServer(SimulatedChain(chain_id=CHAIN_ID)).start()
    yield server
    server.stop()


@pytest.fixture
def chain(chain_server) -> SimulatedChain:
    return chain_server.chain


@pytest.fixture
def client(chain_server):
    rest = AptosRestClient(chain_server.url, simulated=True, timeout_secs=2.0)
    yield rest
    rest.close()


@pytest.fixture
def signer() -> Signer:
    return Signer(PrivateKey.from_str(PAYER_KEY, strict=False))


@pytest.fixture
def funded(chain, signer) -> Signer:
    chain.fund(USDC, signer.address, 1_000_000_000)
    return signer


def terms(signer: Signer, sequence: int, *, amount: int = 250_000, recipient: str = RECIPIENT,
          expiration_secs: int = 4_000_000_000, chain_id: int = CHAIN_ID) -> TransferTerms:
    return TransferTerms(sender=signer.address, sequence_number=sequence, asset_metadata=USDC,
                         recipient=recipient, amount=amount, expiration_secs=expiration_secs,
                         chain_id=chain_id, max_gas_amount=2_000, gas_unit_price=100)


@pytest.fixture
def backup_settings(settings, tmp_path):
    settings.BACKUP_STAGING_DIR = tmp_path / "staging"
    settings.BACKUP_INTERVAL_SECS = 240
    return settings


BACKUP_PASSWORD = "porto-test-backup-password"


@pytest.fixture
def repository(tmp_path, initialised_repository) -> ResticRepository:
    """An initialised, empty repository of this test's own (``tests/support/restic.py``)."""
    return initialised_repository(tmp_path / "repository", BACKUP_PASSWORD)


@pytest.fixture
def unused_location(tmp_path) -> ResticRepository:
    """A repository location where nothing is yet, beside the test's ``repository``."""
    return ResticRepository(str(tmp_path / "unused-repository"), BACKUP_PASSWORD)


@pytest.fixture
def admission(tmp_path, owner):
    """An admission directory with one evidence file and one envelope, as the gateway writes them."""
    gateway = CommandGateway(owner, tmp_path / "admission")
    gateway.evidence.put(b"chain said: confirmed")
    return tmp_path / "admission"
