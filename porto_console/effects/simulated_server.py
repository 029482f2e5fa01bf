"""The SIMULATED chain over loopback HTTP: an Aptos-compatible subset plus a control surface.

Aptos REST subset (under ``/v1``): ledger info, account sequence numbers, an
account's committed transactions by sequence number, BCS transaction
submission and lookup by hash. Control (under ``/simulated``,
for tests and the demo only): mint, queue faults, release held transactions,
advance the clock, list committed transfers and anchored commitments, read balances.

It binds 127.0.0.1 only. Every response carries ``X-Porto-Chain: SIMULATED``
and every JSON body a ``"chain": "SIMULATED"`` field. Every ``/v1`` read also
carries the ledger version and time it was read at, as an Aptos node's do
(``X-Aptos-Ledger-Version``, ``X-Aptos-Ledger-TimestampUsec``), read before
the answer, so the answer covers at least that version.

    python -m porto_console.effects.simulated_server --port 8010 --chain-id 4 --state var/simulated-chain.json

With ``--state`` what the chain committed survives its own restarts and
SIGKILL and its mempool does not, as on a real node (``simulated_chain``);
``--keep-mempool`` keeps the mempool too. Without ``--state`` it forgets
everything when it stops. ``--clock-offset-secs`` starts a new chain's clock
that far from the wall clock (negative: behind it).
"""

from __future__ import annotations

import argparse
import logging
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from ledger_engine.open_json import Document, JsonObject, Report
from porto_console.effects.simulated_chain import LABEL, MEMPOOL_IS_FULL, Fault, SimulatedChain, SubmissionRefused

BCS_CONTENT_TYPE = "application/x.aptos.signed_transaction+bcs"
LOOPBACK = "127.0.0.1"
_ACCOUNT = re.compile(r"/v1/accounts/(0x[0-9a-f]{64})")
_BY_HASH = re.compile(r"/v1/transactions/by_hash/(0x[0-9a-f]{64})")
_ACCOUNT_TRANSACTIONS = re.compile(r"/v1/accounts/(0x[0-9a-f]{64})/transactions")
MAX_PAGE = 100  # an Aptos node's largest page of account transactions

log = logging.getLogger("porto.simulated_chain")


class _Handler(BaseHTTPRequestHandler):
    server: "SimulatedChainServer"
    protocol_version = "HTTP/1.1"
    _read_at: Document | None = None  # the ledger info a /v1 read is answered at
    disable_nagle_algorithm = True  # headers and body go out in separate writes; do not wait on delayed ACKs

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s chain http: " + format, LABEL, *args)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Every request's line is a debug line: formatted only when debug lines are kept."""
        if log.isEnabledFor(logging.DEBUG):
            super().log_request(code, size)

    @property
    def chain(self) -> SimulatedChain:
        return self.server.chain

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if path.startswith("/v1"):
            self._read_at = read_at = self.chain.ledger_info()
            if path in ("/v1", "/v1/"):
                return self._json(200, read_at)
        if match := _ACCOUNT.fullmatch(path):
            sequence = self.chain.sequence_number(match[1])
            if sequence is None:
                return self._error(404, "account_not_found", f"account {match[1]} not found")
            return self._json(200, {"sequence_number": str(sequence), "authentication_key": match[1]})
        if match := _ACCOUNT_TRANSACTIONS.fullmatch(path):
            return self._account_transactions(match[1], _query(query))
        if match := _BY_HASH.fullmatch(path):
            found = self.chain.lookup(match[1])
            if found is None:
                return self._error(404, "transaction_not_found", f"transaction {match[1]} not found")
            return self._json(200, found)
        if path == "/simulated/transfers":
            return self._json(200, {"transfers": self.chain.transfers()})
        if path == "/simulated/anchors":
            return self._json(200, {"anchors": self.chain.anchors()})
        if path == "/simulated/balance":
            arguments = _query(query)
            amount = self.chain.balance(arguments.get("asset", ""), arguments.get("address", ""))
            return self._json(200, {"balance": str(amount)})
        return self._error(404, "not_found", f"no route {path}")

    def _account_transactions(self, address: str, arguments: dict[str, str]) -> None:
        start, limit = arguments.get("start", "0"), arguments.get("limit", "25")
        if not (start.isdigit() and limit.isdigit() and 1 <= int(limit) <= MAX_PAGE):
            return self._error(400, "invalid_input", f"start is a sequence number, limit 1 to {MAX_PAGE}")
        found = self.chain.account_transactions(address, int(start), int(limit))
        if found is None:
            return self._error(404, "account_not_found", f"account {address} not found")
        return self._json(200, found)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/v1/transactions":
            return self._submit(body)
        try:
            request = orjson.loads(body or b"{}")
            answer = self._control(self.path, request)
        except (ValueError, KeyError, TypeError) as error:
            return self._error(400, "invalid_input", str(error))
        if answer is None:
            return self._error(404, "not_found", f"no route {self.path}")
        return self._json(200, answer)

    def _control(self, path: str, request: JsonObject) -> Report | None:
        if path == "/simulated/fund":
            self.chain.fund(request["asset"], request["address"], _u64(request["amount"]))
        elif path == "/simulated/faults":
            fault = Fault(request["kind"], float(request.get("hold_seconds", 0)),
                          request.get("vm_status", "SIMULATED_REJECTION"))
            self.chain.inject(fault, int(request.get("times", 1)))
        elif path == "/simulated/hold":
            self.chain.hold_transfers_after(int(request["after"]))
        elif path == "/simulated/release":
            count = request.get("count")
            self.chain.release(request.get("hash"), count=None if count is None else int(count))
        elif path == "/simulated/advance":
            self.chain.advance(float(request["seconds"]))
        else:
            return None
        return {"ok": True}

    def _submit(self, body: bytes) -> None:
        if self.headers.get("Content-Type") != BCS_CONTENT_TYPE:
            return self._error(415, "invalid_input", f"submit BCS bytes as {BCS_CONTENT_TYPE}")
        try:
            submission = self.chain.submit(body)
        except SubmissionRefused as refused:
            if refused.code == MEMPOOL_IS_FULL:
                return self._error(507, "mempool_is_full", str(refused))
            return self._error(400, "vm_error", f"Invalid transaction: Type: Validation Code: {refused.code}",
                               vm_error_code=refused.code)
        fault = submission.fault
        if fault and fault.kind in ("drop_response", "timeout"):
            time.sleep(fault.hold_seconds)
            self.close_connection = True
            log.info("%s chain: answer withheld (%s fault)", LABEL, fault.kind)
            return
        assert submission.transfer is not None  # only a submission lost to a timeout fault has none
        return self._json(202, {"type": "pending_transaction", "hash": submission.transfer.transaction_hash})

    def _json(self, status: int, value: Document | list[Document]) -> None:
        data = orjson.dumps({**value, "chain": LABEL} if isinstance(value, dict) else value)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Porto-Chain", LABEL)
        read_at, self._read_at = self._read_at, None
        if read_at is not None:
            self.send_header("X-Aptos-Chain-Id", str(read_at["chain_id"]))
            self.send_header("X-Aptos-Ledger-Version", read_at["ledger_version"])
            self.send_header("X-Aptos-Ledger-TimestampUsec", read_at["ledger_timestamp"])
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, code: str, message: str, vm_error_code: str | None = None) -> None:
        self._json(status, {"message": message, "error_code": code, "vm_error_code": vm_error_code})


def _query(query: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in query.split("&") if "=" in part)


def _u64(text: Any) -> int:
    if type(text) is not str or not text.isdigit() or int(text) >= 2**64:
        raise ValueError("amounts are decimal strings of a u64")
    return int(text)


class SimulatedChainServer(ThreadingHTTPServer):
    daemon_threads = True
    # How often serving looks for a request to stop: ``stop`` waits up to this long (the default is 0.5 s).
    STOP_POLL_S = 0.05

    def __init__(self, chain: SimulatedChain, port: int = 0) -> None:
        super().__init__((LOOPBACK, port), _Handler)
        self.chain = chain

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.server_address[1]}"

    def start(self) -> "SimulatedChainServer":
        threading.Thread(target=self.serve_forever, args=(self.STOP_POLL_S,), name="simulated-chain",
                         daemon=True).start()
        log.info("%s chain: serving on %s (chain id %s)", LABEL, self.url, self.chain.chain_id)
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=f"{LABEL} Aptos-compatible chain on loopback")
    parser.add_argument("--port", type=int, default=8010)
    parser.add_argument("--chain-id", type=int, default=4)
    parser.add_argument("--state", help="the file that keeps what the chain committed across restarts")
    parser.add_argument("--keep-mempool", action="store_true",
                        help="keep the mempool across restarts too (a real node loses it)")
    parser.add_argument("--clock-offset-secs", type=float, default=0.0,
                        help="a new chain's clock this far from the wall clock; negative is behind it")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    chain = SimulatedChain(chain_id=args.chain_id, state_path=args.state, keep_mempool=args.keep_mempool,
                           clock_offset_secs=args.clock_offset_secs)
    server = SimulatedChainServer(chain, args.port)
    log.info("%s chain: serving on %s (chain id %s)", LABEL, server.url, args.chain_id)
    server.serve_forever()


if __name__ == "__main__":
    main()
