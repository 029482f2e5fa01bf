"""The SIMULATED chain through the Aptos REST client: signatures, sequences, expiry, faults, labels."""

from __future__ import annotations

import time

import httpx
import pytest

from aptos_sdk.account_address import AccountAddress
from aptos_sdk.bcs import Serializer
from aptos_sdk.ed25519 import PrivateKey
from aptos_sdk.transactions import (
    EntryFunction, RawTransaction, SignedTransaction, TransactionArgument, TransactionPayload,
)

from porto_console.effects.aptos_rest import AptosRestClient, ChainMisconfigured
from porto_console.effects.chain import ChainUncertain, Fate, SubmitRefused, observe
from porto_console.effects.effect_worker import look_up, may_still_land, watch
from porto_console.effects.payment_journal import SignedPaymentJournal, SignedPaymentRecord
from porto_console.effects.simulated_chain import (
    MEMPOOL_CAPACITY_PER_SENDER, Fault, SimulatedChain, SubmissionRefused,
)
from porto_console.effects.transactions import CommitmentTerms, transfer_payload
from tests.effects.chain_process import ChainProcess
from tests.effects.conftest import CHAIN_ID, PAYER_KEY, RECIPIENT, USDC, terms


def test_transfer_lands_once_and_moves_exact_micro_units(chain, client, funded):
    signed = funded.sign(terms(funded, 0, amount=250_001))
    assert client.submit(signed.signed_bytes) == signed.transaction_hash
    found = client.transaction(signed.transaction_hash)
    assert found.committed and found.success and found.version == 1
    assert chain.balance(USDC, RECIPIENT) == 250_001
    assert chain.balance(USDC, funded.address) == 1_000_000_000 - 250_001
    assert client.sequence_number(funded.address) == 1
    with pytest.raises(SubmitRefused) as again:
        client.submit(signed.signed_bytes)
    assert again.value.code == "SEQUENCE_NUMBER_TOO_OLD"
    assert len(chain.transfers()) == 1


def test_bad_signature_wrong_chain_and_expired_are_refused(chain, client, funded):
    tampered = bytearray(funded.sign(terms(funded, 0)).signed_bytes)
    tampered[60] ^= 1
    refusals = []
    for body in (bytes(tampered), funded.sign(terms(funded, 0, chain_id=1)).signed_bytes,
                 funded.sign(terms(funded, 0, expiration_secs=1)).signed_bytes):
        with pytest.raises(SubmitRefused) as refused:
            client.submit(body)
        refusals.append(refused.value.code)
    assert refusals == ["INVALID_SIGNATURE", "BAD_CHAIN_ID", "TRANSACTION_EXPIRED"]
    assert chain.transfers() == [] and client.sequence_number(funded.address) == 0


def test_future_sequence_waits_for_the_gap_and_expires_in_the_mempool(chain, client, funded):
    now = client.ledger_state().timestamp_us // 1_000_000
    later = funded.sign(terms(funded, 1, expiration_secs=now + 30))
    client.submit(later.signed_bytes)
    assert client.transaction(later.transaction_hash).committed is False
    assert observe(client, later).fate == Fate.PENDING
    chain.advance(31)
    assert client.transaction(later.transaction_hash) is None
    assert observe(client, later).fate == Fate.EXPIRED
    first = funded.sign(terms(funded, 0))
    client.submit(first.signed_bytes)
    assert [t["hash"] for t in chain.transfers()] == [first.transaction_hash]


def test_gap_filled_runs_waiting_transactions_in_order(chain, client, funded):
    second, first = funded.sign(terms(funded, 1, amount=2)), funded.sign(terms(funded, 0, amount=1))
    client.submit(second.signed_bytes)
    client.submit(first.signed_bytes)
    assert [t["hash"] for t in chain.transfers()] == [first.transaction_hash, second.transaction_hash]


def test_insufficient_balance_fails_on_chain_and_uses_the_sequence(chain, client, signer):
    signed = signer.sign(terms(signer, 0))
    client.submit(signed.signed_bytes)
    outcome = observe(client, signed)
    assert outcome.fate == Fate.FAILED and "EINSUFFICIENT_BALANCE" in outcome.transaction.vm_status
    assert client.sequence_number(signer.address) == 1 and chain.balance(USDC, RECIPIENT) == 0


def test_lost_response_after_acceptance_is_uncertain_but_landed(chain, client, funded):
    chain.inject(Fault("drop_response"))
    signed = funded.sign(terms(funded, 0))
    with pytest.raises(ChainUncertain):
        client.submit(signed.signed_bytes)
    assert observe(client, signed).fate == Fate.SUCCESS


def test_timeout_before_acceptance_leaves_it_unknown_until_expiry(chain, chain_server, funded):
    quick = AptosRestClient(chain_server.url, simulated=True, timeout_secs=0.2)
    chain.inject(Fault("timeout", hold_seconds=0.5))
    now = quick.ledger_state().timestamp_us // 1_000_000
    signed = funded.sign(terms(funded, 0, expiration_secs=now + 20))
    with pytest.raises(ChainUncertain):
        quick.submit(signed.signed_bytes)
    assert observe(quick, signed).fate == Fate.UNKNOWN
    chain.advance(21)
    assert observe(quick, signed).fate == Fate.EXPIRED
    quick.close()


def test_injected_rejection_and_late_confirmation(chain, client, funded):
    chain.inject(Fault("reject", vm_status="INSUFFICIENT_BALANCE_FOR_TRANSACTION_FEE"))
    signed = funded.sign(terms(funded, 0))
    with pytest.raises(SubmitRefused) as refused:
        client.submit(signed.signed_bytes)
    assert refused.value.code == "INSUFFICIENT_BALANCE_FOR_TRANSACTION_FEE"
    chain.inject(Fault("confirm_late"))
    client.submit(signed.signed_bytes)
    assert observe(client, signed).fate == Fate.PENDING
    chain.release(signed.transaction_hash)
    assert observe(client, signed).fate == Fate.SUCCESS


def test_late_confirmation_released_after_expiry_never_lands(chain, client, funded):
    now = client.ledger_state().timestamp_us // 1_000_000
    chain.inject(Fault("confirm_late"))
    signed = funded.sign(terms(funded, 0, expiration_secs=now + 10))
    client.submit(signed.signed_bytes)
    chain.advance(11)
    chain.release()
    assert observe(client, signed).fate == Fate.EXPIRED
    assert chain.transfers() == []


def test_a_hold_lets_the_first_transfers_run_and_releases_the_lowest_sequences_first(chain, client, funded):
    chain.hold_transfers_after(2)
    signed = [funded.sign(terms(funded, sequence)) for sequence in range(5)]
    for transfer in signed:
        client.submit(transfer.signed_bytes)
    client.submit(signed[3].signed_bytes)  # a resubmission neither runs nor counts against the hold
    assert [t["hash"] for t in chain.transfers()] == [t.transaction_hash for t in signed[:2]]
    chain.release(count=2)
    assert [t["hash"] for t in chain.transfers()] == [t.transaction_hash for t in signed[:4]]
    late = funded.sign(terms(funded, 5))
    client.submit(late.signed_bytes)
    assert client.transaction(late.transaction_hash).committed is False  # the hold still applies to new ones
    chain.release()
    assert len(chain.transfers()) == 6
    after = funded.sign(terms(funded, 6))
    client.submit(after.signed_bytes)
    assert client.transaction(after.transaction_hash).committed is True  # releasing everything ends the hold


def test_releasing_more_than_is_held_lets_the_next_transfers_to_arrive_run(chain, client, funded):
    chain.hold_transfers_after(1)
    signed = [funded.sign(terms(funded, sequence)) for sequence in range(4)]
    client.submit(signed[0].signed_bytes)
    chain.release(count=2)  # nothing is held yet: the next two to arrive run
    for transfer in signed[1:]:
        client.submit(transfer.signed_bytes)
    assert [t["hash"] for t in chain.transfers()] == [t.transaction_hash for t in signed[:3]]
    assert client.transaction(signed[3].transaction_hash).committed is False


def test_every_answer_is_labelled_and_the_client_refuses_a_mismatch(chain_server):
    answer = httpx.get(chain_server.url + "/v1")
    assert answer.headers["X-Porto-Chain"] == "SIMULATED" and answer.json()["chain"] == "SIMULATED"
    missing = httpx.get(chain_server.url + "/v1/transactions/by_hash/0x" + "00" * 32)
    assert missing.status_code == 404 and missing.json()["chain"] == "SIMULATED"
    real = AptosRestClient(chain_server.url, simulated=False)
    with pytest.raises(ChainMisconfigured):
        real.ledger_state()
    real.close()


def test_control_surface_over_http(chain_server, signer):
    fund = httpx.post(chain_server.url + "/simulated/fund",
                      json={"asset": USDC, "address": signer.address, "amount": "5"})
    assert fund.json() == {"ok": True, "chain": "SIMULATED"}
    bad = httpx.post(chain_server.url + "/simulated/fund",
                     json={"asset": USDC, "address": signer.address, "amount": 5.0})
    assert bad.status_code == 400
    balance = httpx.get(chain_server.url + "/simulated/balance",
                        params={"asset": USDC, "address": signer.address}).json()
    assert balance["balance"] == "5"
    unknown = httpx.post(chain_server.url + "/simulated/faults", json={"kind": "meteor"})
    assert unknown.status_code == 400


def test_submission_must_be_bcs(chain_server):
    answer = httpx.post(chain_server.url + "/v1/transactions", json={"hash": "0x00"})
    assert answer.status_code == 415


class HidingNode:
    """The real node, except that its lookup by hash does not return ``hidden``: a replica behind the one that
    answered the ledger's clock, a pruned node or a liar."""

    def __init__(self, real, hidden: set[str]) -> None:
        self.real, self.hidden, self.label = real, hidden, real.label

    def transaction(self, transaction_hash):
        return None if transaction_hash in self.hidden else self.real.transaction(transaction_hash)

    def __getattr__(self, name):
        return getattr(self.real, name)


class Reading:
    """What watching a journalled transaction reads from a worker: its chain and its journal."""

    def __init__(self, chain, journal) -> None:
        self.chain, self.journal = chain, journal


def journalled_transfer(signer, expiration_secs, *, amount=250_000):
    def sign(sequence):
        signed = signer.sign(terms(signer, sequence, expiration_secs=expiration_secs, amount=amount))
        return SignedPaymentRecord.of("run-1.artist-a", "run-1.artist-a.effect", "payments-1", signed, 0)
    return sign


def test_a_landed_transfer_the_node_stops_returning_is_never_expired_nor_signed_again(chain, client, funded,
                                                                                     tmp_path):
    journal = SignedPaymentJournal(tmp_path / "signed-payments.jsonl")
    now = client.ledger_state().timestamp_us // 1_000_000
    sign = journalled_transfer(funded, now + 120)
    first, _ = journal.sign_next_for("run-1.artist-a", sender=funded.address, chain_sequence=0, chain_time_secs=now,
                                     reuse=lambda last: True, sign=sign)
    client.submit(first.signed_bytes)
    assert client.transaction(first.transaction_hash).success
    chain.advance(200)  # past its expiry: the lookup by hash now answers 404
    hiding = Reading(HidingNode(client, {first.transaction_hash}), journal)
    with pytest.raises(ChainUncertain, match="hides"):
        watch(hiding, first, may_rebroadcast=lambda: False, window_secs=0)
    now = client.ledger_state().timestamp_us // 1_000_000
    with pytest.raises(ChainUncertain):
        journal.sign_next_for("run-1.artist-a", sender=funded.address,
                              chain_sequence=client.sequence_number(funded.address), chain_time_secs=now,
                              reuse=lambda last: may_still_land(hiding, last), sign=sign)
    assert [record.transaction_hash for record in journal.records()] == [first.transaction_hash]
    assert chain.balance(USDC, RECIPIENT) == 250_000


def test_a_transfer_whose_sequence_another_journalled_transfer_used_can_no_longer_land(chain, client, funded,
                                                                                      tmp_path):
    journal = SignedPaymentJournal(tmp_path / "signed-payments.jsonl")
    now = client.ledger_state().timestamp_us // 1_000_000
    lost, _ = journal.sign_next_for("run-1.artist-a", sender=funded.address, chain_sequence=0, chain_time_secs=now,
                                    reuse=lambda last: True, sign=journalled_transfer(funded, now + 5))
    chain.advance(10)  # never broadcast, now expired: its sequence is free again
    now = client.ledger_state().timestamp_us // 1_000_000
    landed, fresh = journal.sign_next_for("run-1.artist-a", sender=funded.address, chain_sequence=0,
                                          chain_time_secs=now, reuse=lambda last: may_still_land(Reading(client, journal), last),
                                          sign=journalled_transfer(funded, now + 120))
    assert fresh and landed.sequence_number == lost.sequence_number == 0
    client.submit(landed.signed_bytes)
    seen = look_up(Reading(client, journal), lost)
    assert (seen.fate, seen.superseded_by, seen.may_still_land) == (Fate.EXPIRED, landed.transaction_hash, False)
    assert seen.evidence("SIMULATED")["superseded_by"] == landed.transaction_hash
    only_the_lost_one = SignedPaymentJournal(tmp_path / "another-signer.jsonl")
    only_the_lost_one.append(lost)
    with pytest.raises(ChainUncertain, match="hides"):
        look_up(Reading(client, only_the_lost_one), lost)


def node(answer_for_hash, *, ledger_version="10", lookup_version="10"):
    """An Aptos node: ledger info at ``ledger_version``, every lookup by hash answered by ``answer_for_hash``."""
    def respond(request):
        if request.url.path.rstrip("/").endswith("/v1"):
            return httpx.Response(200, json={"ledger_version": ledger_version, "ledger_timestamp": "5000000000000000"},
                                  headers={"X-Aptos-Ledger-Version": ledger_version})
        status, body = answer_for_hash(request.url.path.rsplit("/", 1)[-1])
        headers = {} if lookup_version is None else {"X-Aptos-Ledger-Version": lookup_version}
        return httpx.Response(status, json=body, headers=headers)
    return AptosRestClient("https://rpc.example", simulated=False, transport=httpx.MockTransport(respond))


NOT_FOUND = (404, {"error_code": "transaction_not_found", "message": "not found"})


@pytest.mark.parametrize("lookup_version", ["9", None])
def test_an_absence_read_behind_the_ledger_already_read_or_at_no_stated_version_is_uncertain(lookup_version):
    client = node(lambda _: NOT_FOUND, lookup_version=lookup_version)
    client.ledger_state()
    with pytest.raises(ChainUncertain):
        client.transaction("0x" + "ab" * 32)


def test_a_lookup_answered_with_another_transaction_is_uncertain():
    asked, other = "0x" + "ab" * 32, "0x" + "cd" * 32
    client = node(lambda _: (200, {"type": "user_transaction", "hash": other, "success": True,
                                   "vm_status": "Executed successfully", "version": "9", "timestamp": "999"}))
    with pytest.raises(ChainUncertain, match="answered with"):
        client.transaction(asked)


@pytest.mark.parametrize("told", [{"sender": "0x" + "ee" * 32}, {"sequence_number": "1"},
                                  {"payload": transfer_payload(USDC, "0x" + "ee" * 32, 250_000)},
                                  {"payload": transfer_payload(USDC, RECIPIENT, 1)},
                                  {"payload": transfer_payload("0x" + "ee" * 32, RECIPIENT, 250_000)}])
def test_a_confirmation_of_other_terms_than_those_signed_is_uncertain(signer, tmp_path, told):
    record = journalled_transfer(signer, 4_000_000_000)(0)
    stated = {"type": "user_transaction", "hash": record.transaction_hash, "success": True,
              "vm_status": "Executed successfully", "version": "9", "timestamp": "999", "sender": record.sender,
              "sequence_number": "0", "payload": record.payload_json()}
    honest = Reading(node(lambda _: (200, stated)), SignedPaymentJournal(tmp_path / "journal.jsonl"))
    assert watch(honest, record, may_rebroadcast=lambda: False, window_secs=0).fate == Fate.SUCCESS
    lying = Reading(node(lambda _: (200, {**stated, **told})), honest.journal)
    with pytest.raises(ChainUncertain, match="not the transaction that was signed"):
        watch(lying, record, may_rebroadcast=lambda: False, window_secs=0)


def commitment(signer, sequence, *, artifact_hash="ab" * 32, count=3):
    return signer.sign(CommitmentTerms(sender=signer.address, sequence_number=sequence, artifact_hash=artifact_hash,
                                       count=count, expiration_secs=4_000_000_000, chain_id=4, max_gas_amount=2_000,
                                       gas_unit_price=100, journal_size=9, journal_root="cd" * 32))


def test_a_commitment_is_anchored_once_and_listed_apart_from_transfers(chain, client, signer):
    signed = commitment(signer, 0)
    assert client.submit(signed.signed_bytes) == signed.transaction_hash
    assert client.transaction(signed.transaction_hash).success
    with pytest.raises(SubmitRefused):
        client.submit(signed.signed_bytes)
    anchors = chain.anchors()
    assert [(a["hash"], a["payload"]["arguments"]) for a in anchors] == [(signed.transaction_hash, ["0x" + "ab" * 32, "3", "0x" + "cd" * 32, "9"])]
    assert anchors[0]["payload"]["function"] == f"{signer.address}::commitments::anchor"
    assert chain.transfers() == []


def test_a_commitment_must_carry_a_32_byte_hash_to_the_senders_own_module(chain, signer):
    with pytest.raises(ValueError):
        commitment(signer, 0, artifact_hash="ab" * 31)
    raw = RawTransaction(AccountAddress.from_str(signer.address), 0, TransactionPayload(EntryFunction.natural(
        "0x" + "ee" * 32 + "::commitments", "anchor", [],
        [TransactionArgument(b"\xab" * 32, Serializer.to_bytes), TransactionArgument(3, Serializer.u64)])),
        2_000, 100, 4_000_000_000, 4)
    foreign = SignedTransaction(raw, raw.sign(PrivateKey.from_str(PAYER_KEY, strict=False))).bytes()
    with pytest.raises(SubmissionRefused, match="commitments module"):
        chain.submit(foreign)
    assert chain.anchors() == []


def killed_while_waiting(chain, funded, sequences: tuple[int, ...], *, first_lands: bool):
    """The chain process with the first transfer landed (or held) and the others waiting, killed and started
    again; a client of the restarted chain and the transfers, in ``sequences``' order."""
    chain.control("fund", asset=USDC, address=funded.address, amount="1000000")
    client = AptosRestClient(chain.url, simulated=True, timeout_secs=2.0)
    transfers = [funded.sign(terms(funded, sequence, amount=1_000 * (sequence + 1))) for sequence in sequences]
    for number, transfer in enumerate(transfers):
        if number == int(first_lands):
            chain.control("faults", kind="confirm_late")  # held, and every later one waits behind it
        client.submit(transfer.signed_bytes)
    chain.kill()
    chain.start()
    return AptosRestClient(chain.url, simulated=True, timeout_secs=2.0), transfers


@pytest.mark.slow_kill
def test_a_killed_chain_keeps_what_it_committed_and_forgets_its_mempool_as_a_node_does(tmp_path, funded):
    """Accounts, balances, sequences and landed transfers come back after SIGKILL; waiting transfers do not."""
    chain = ChainProcess(tmp_path / "chain", CHAIN_ID).start()
    try:
        client, (landed, held, waiting) = killed_while_waiting(chain, funded, (0, 1, 3), first_lands=True)
        assert [t["hash"] for t in chain.transfers()] == [landed.transaction_hash]
        assert chain.balance(USDC, funded.address) == 1_000_000 - 1_000
        assert client.sequence_number(funded.address) == 1
        assert client.transaction(held.transaction_hash) is None and client.transaction(waiting.transaction_hash) is None
        client.submit(held.signed_bytes)  # the same bytes sent again land, once, in sequence order
        chain.kill()
        chain.start()
        assert [t["hash"] for t in chain.transfers()] == [landed.transaction_hash, held.transaction_hash]
        assert chain.balance(USDC, RECIPIENT) == 1_000 + 2_000
        assert AptosRestClient(chain.url, simulated=True).sequence_number(funded.address) == 2
        assert httpx.get(f"{chain.url}/v1", timeout=2).headers["X-Porto-Chain"] == "SIMULATED"
    finally:
        chain.stop()


@pytest.mark.slow_kill
def test_a_chain_started_to_keep_its_mempool_keeps_it_and_its_held_transfers_across_sigkill(tmp_path, funded):
    chain = ChainProcess(tmp_path / "chain", CHAIN_ID, keep_mempool=True).start()
    try:
        client, (held, waiting) = killed_while_waiting(chain, funded, (0, 2), first_lands=False)
        assert client.transaction(held.transaction_hash).committed is False
        assert client.transaction(waiting.transaction_hash).committed is False
        chain.control("release")
        assert [t["hash"] for t in chain.transfers()] == [held.transaction_hash]
    finally:
        chain.stop()


def test_a_log_line_cut_short_by_a_kill_was_never_answered_and_is_dropped(tmp_path, funded):
    state = tmp_path / "chain.json"
    chain = SimulatedChain(chain_id=4, state_path=state)
    chain.fund(USDC, funded.address, 1_000_000)
    first = funded.sign(terms(funded, 0))
    chain.submit(first.signed_bytes)
    chain.close()
    log = state.with_name(state.name + ".log")
    whole = log.read_bytes()
    log.write_bytes(whole + b'{"commit": {"signed_by')
    again = SimulatedChain(chain_id=4, state_path=state)
    assert [t["hash"] for t in again.transfers()] == [first.transaction_hash]
    assert log.read_bytes() == whole
    second = funded.sign(terms(funded, 1))
    again.submit(second.signed_bytes)
    again.close()
    assert [t["hash"] for t in SimulatedChain(chain_id=4, state_path=state).transfers()] == \
        [first.transaction_hash, second.transaction_hash]


def test_at_most_a_hundred_transfers_of_one_sender_wait_and_the_next_is_refused_as_a_node_does(
        chain_server, client, funded):
    """The cap counts every waiting transfer of the sender, so a sender must leave room for its next sequence."""
    capacity = MEMPOOL_CAPACITY_PER_SENDER
    behind_a_gap = [funded.sign(terms(funded, sequence)) for sequence in range(1, capacity)]
    for transfer in behind_a_gap:
        client.submit(transfer.signed_bytes)
    client.submit(behind_a_gap[0].signed_bytes)  # the same bytes again are no new transfer
    client.submit(funded.sign(terms(funded, 0)).signed_bytes)  # room was left for the gap: everything runs
    assert client.sequence_number(funded.address) == capacity
    full = [funded.sign(terms(funded, sequence)) for sequence in range(capacity + 1, 2 * capacity + 2)]
    for transfer in full[:capacity]:
        client.submit(transfer.signed_bytes)
    for refused in (full[-1], funded.sign(terms(funded, capacity))):
        answer = httpx.post(f"{chain_server.url}/v1/transactions", content=refused.signed_bytes,
                            headers={"Content-Type": "application/x.aptos.signed_transaction+bcs"})
        assert (answer.status_code, answer.json()["error_code"]) == (507, "mempool_is_full")
        with pytest.raises(SubmitRefused) as turned_away:
            client.submit(refused.signed_bytes)
        assert turned_away.value.code == "mempool_is_full"
    assert client.sequence_number(funded.address) == capacity


def test_an_accounts_committed_transactions_are_read_by_sequence_number(chain, client, funded):
    transfers = [funded.sign(terms(funded, sequence, amount=1 + sequence)) for sequence in range(5)]
    for transfer in transfers:
        client.submit(transfer.signed_bytes)
    page = client.account_transactions(funded.address, 1, 3)
    assert [(t.transaction_hash, t.sequence_number, t.committed) for t in page] == \
        [(transfers[n].transaction_hash, n, True) for n in (1, 2, 3)]
    assert [t.transaction_hash for t in client.account_transactions(funded.address, 4, 100)] == \
        [transfers[4].transaction_hash]
    assert client.account_transactions(funded.address, 5, 100) == []
    assert client.account_transactions("0x" + "ee" * 32, 0, 10) == []


def test_a_node_listing_an_accounts_transactions_out_of_order_is_uncertain(signer):
    record = journalled_transfer(signer, 4_000_000_000)(0)
    listed = {"type": "user_transaction", "hash": record.transaction_hash, "success": True,
              "vm_status": "Executed successfully", "version": "9", "timestamp": "999", "sender": record.sender,
              "sequence_number": "1", "payload": record.payload_json()}

    def respond(request):
        return httpx.Response(200, json=[listed], headers={"X-Aptos-Ledger-Version": "10"})

    client = AptosRestClient("https://rpc.example", simulated=False, transport=httpx.MockTransport(respond))
    with pytest.raises(ChainUncertain, match="sequence order"):
        client.account_transactions(signer.address, 0, 10)


def test_a_chain_clock_starts_behind_or_ahead_and_only_moves_forward():
    behind = SimulatedChain(chain_id=4, clock_offset_secs=-600)
    assert behind.now_us() < (time.time() - 590) * 1_000_000
    behind.advance(1_200)
    assert behind.now_us() > (time.time() + 590) * 1_000_000
    with pytest.raises(ValueError, match="never runs back"):
        behind.advance(-1)
