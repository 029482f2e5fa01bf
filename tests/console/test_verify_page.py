"""The recipient's verifier page (/verify/) in headless Chromium, against the statement-file vectors.

The page pins the test settings' checkpoint key, the one the vectors are signed
with. It must reach the same verdict as ``check_statement_file`` on every
vector (tests/merkle/vectors/statements/expected.json) and on every day-line
parts case (tests/merkle/vectors/day_line_parts/expected.json), show each check
as passed, failed or not made, say "Verified" only for a file Porto's key
signed, and make no request beyond loading itself.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from ledger_engine.merkle.document import MAX_DOCUMENT_BYTES
from ledger_engine.merkle.statement import statement_file_bytes
from porto_console.verifier import CONTENT_SECURITY_POLICY
from tests.console.test_browser import chromium, screenshots  # noqa: F401  (the project's browser fixtures)
from tests.merkle import checkpoint_keys, parts_vectors
from tests.merkle.statement_vectors import DIRECTORY, committed, forged_file, python_verdict

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = pytest.mark.browser

RFC_VECTORS = Path(__file__).resolve().parents[1] / "merkle" / "vectors" / "rfc9162_tree.json"
VERIFY = """async (bytes) => {
  const result = await PortoVerify.verifyStatementBytes(new Uint8Array(bytes));
  return result.verdict === "verified"
    ? {verdict: result.verdict, leaf_index: result.leaf_index, tree_size: result.tree_size}
    : {verdict: result.verdict, reason: result.reason, field: result.field};
}"""
VERIFY_WITH_PARTS = """async ([statement, parts]) => {
  const result = await PortoVerify.verifyStatementBytes(new Uint8Array(statement), parts.map((raw) => new Uint8Array(raw)));
  const check = result.checks.find((each) => each.check === "parts");
  const found = {verdict: result.verdict, parts_check: check.result, parts_reason: check.reason};
  return result.verdict === "verified" ? found : Object.assign(found, {reason: result.reason, field: result.field});
}"""
CHECKS = ["file", "leaf", "root", "checkpoint", "signature", "parts", "anchor"]
PARTS = parts_vectors.DIRECTORY


@pytest.fixture
def verifier(chromium, live_server):  # noqa: F811
    """The page, opened anonymously in a fresh context, with every request it made."""
    context = chromium.new_context(base_url=live_server.url)
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    response = page.goto("/verify/")
    assert response.status == 200
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    page.requests = requests
    page.response = response
    yield page
    context.close()


def drop_file(page: Page, name: str) -> None:
    page.set_input_files("#statement-file", str(DIRECTORY / name))


def choose_bytes(page: Page, name: str, raw: bytes) -> None:
    page.set_input_files("#statement-file", files=[{"name": name, "mimeType": "application/json", "buffer": raw}])


def test_the_page_and_the_python_verifier_agree_on_every_vector(verifier):
    vectors = committed()
    assert len(vectors) > 50
    for name, (raw, expected) in vectors.items():
        assert verifier.evaluate(VERIFY, list(raw)) == expected, name
        assert python_verdict(raw) == expected, name


def test_a_valid_statement_passes_every_check_but_the_anchor_which_is_left_to_check_by_hand(verifier, screenshots):
    drop_file(verifier, "valid-middle-leaf.json")
    document = json.loads((DIRECTORY / "valid-middle-leaf.json").read_bytes())
    expect(verifier.locator("#verdict")).to_have_attribute("data-state", "verified")
    expect(verifier.locator("#verdict")).to_contain_text(f"leaf {document['leaf_index']} of the {document['tree_size']}")
    expect(verifier.locator("#verdict")).to_contain_text(f"Porto's key {checkpoint_keys.ORIGIN} signed the batch root")
    for step in ("file", "leaf", "root", "checkpoint", "signature"):
        expect(verifier.locator(f"#step-{step}")).to_have_attribute("data-state", "passed")
    expect(verifier.locator("#step-leaf .step-detail")).to_contain_text(document["leaf_hash"])
    expect(verifier.locator("#step-root .step-detail")).to_contain_text(document["batch_root"])
    expect(verifier.locator("#step-signature .step-detail")).to_contain_text(checkpoint_keys.ORIGIN)
    expect(verifier.locator("#pinned-key-encoded")).to_have_text(checkpoint_keys.signer().verifier_key.encoded())
    anchor = verifier.locator("#step-anchor")
    expect(anchor).to_have_attribute("data-state", "not-made")
    for shown in (document["anchor"]["chain"], document["anchor"]["transaction_hash"],
                  str(document["anchor"]["ledger_version"]), document["batch_root"],
                  f"count {document['tree_size']}", "cannot reach a chain"):
        expect(anchor).to_contain_text(shown)
    expect(verifier.locator("#statement-heading")).to_have_text("Your statement")
    expect(verifier.locator("#statement-recipient")).to_have_text(
        f"{document['statement']['recipient_id']} ({document['statement']['role']})")
    expect(verifier.locator("#statement-lines tbody tr")).to_have_count(len(document["statement"]["lines"]))
    expect(verifier.locator("#statement-lines")).to_contain_text("Noite 🎵 Clara")
    # What a recipient reads: the asset's unit, UTC dates, hours and minutes, and when the payment state was true.
    expect(verifier.locator("#statement-total")).to_have_text("1.666667 USDC")
    expect(verifier.locator("#statement-total span")).to_have_attribute("title", "1666667 minor units")
    expect(verifier.locator("#statement-period")).to_have_text(
        "2026-11-01 to 2026-11-30 (UTC); accounting batch id alloc-2026-11-fixture")
    expect(verifier.locator("#statement-payment")).to_contain_text("Paid when this file was made: 1.666667 USDC")
    expect(verifier.locator("#statement-lines thead")).to_have_text("TitleWorkListenedAmount")
    expect(verifier.locator("#statement-lines tbody tr").first).to_have_text("Saudade em Dówork-00121 h 30 min1.250000 USDC")
    verifier.set_viewport_size({"width": 1100, "height": 900})
    verifier.screenshot(path=screenshots / "verify-statement.png", full_page=True)


@pytest.mark.parametrize(("name", "failed_step", "passed_steps"), [
    ("tampered-amount.json", "leaf", ["file"]),
    ("tampered-path-bit-flipped.json", "root", ["file", "leaf"]),
    ("tampered-path-truncated.json", "root", ["file", "leaf"]),
    ("tampered-proof-from-another-tree.json", "root", ["file", "leaf"]),
    ("malformed-truncated.json", "file", []),
    ("invalid-statement-amount-as-number.json", "file", []),
    ("tampered-checkpoint-of-another-batch.json", "checkpoint", ["file", "leaf", "root"]),
    ("tampered-checkpoint-signature.json", "signature", ["file", "leaf", "root", "checkpoint"]),
    ("forged-signed-by-another-key.json", "signature", ["file", "leaf", "root", "checkpoint"]),
])
def test_a_tampered_file_fails_at_the_step_it_breaks_and_names_why(verifier, screenshots, name, failed_step,
                                                                   passed_steps):
    expected = committed()[name][1]
    drop_file(verifier, name)
    verdict = verifier.locator("#verdict")
    expect(verdict).to_have_attribute("data-state", "refused")
    expect(verdict).to_have_attribute("data-reason", expected["reason"])
    expect(verdict).to_have_attribute("data-field", expected["field"])
    for step in passed_steps:
        expect(verifier.locator(f"#step-{step}")).to_have_attribute("data-state", "passed")
    failed = verifier.locator(f"#step-{failed_step}")
    expect(failed).to_have_attribute("data-state", "failed")
    expect(failed).to_contain_text(expected["reason"])
    for step in CHECKS[CHECKS.index(failed_step) + 1:]:
        expect(verifier.locator(f"#step-{step}")).to_have_attribute("data-state", "not-made")
    if name == "tampered-amount.json":
        verifier.screenshot(path=screenshots / "verify-tampered.png", full_page=True)
    statement = expect(verifier.locator("#statement"))
    if failed_step == "file":
        statement.to_be_hidden()
    else:
        statement.to_be_visible()
        expect(verifier.locator("#statement-heading")).to_have_text("The statement in this file (not verified)")


def test_a_file_dropped_on_the_page_is_checked(verifier):
    raw = (DIRECTORY / "tampered-statement-substituted.json").read_bytes()
    verifier.evaluate("""(bytes) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([new Uint8Array(bytes)], "statement.json", {type: "application/json"}));
      document.getElementById("drop-zone").dispatchEvent(new DragEvent("drop", {dataTransfer: transfer, bubbles: true}));
    }""", list(raw))
    expect(verifier.locator("#verdict")).to_have_attribute("data-reason", "ROOT_MISMATCH")
    expect(verifier.locator("#file-name")).to_have_text("statement.json")


def test_a_checked_file_goes_nowhere_and_the_page_forbids_connections(verifier):
    for name in ("valid-middle-leaf.json", "tampered-amount.json"):
        drop_file(verifier, name)
        expect(verifier.locator("#verdict")).not_to_have_attribute("data-state", "waiting")
    paths = sorted({urlsplit(url).path for url in verifier.requests})
    assert paths == ["/static/verify/verify.css", "/static/verify/verify.js", "/verify/"]
    assert verifier.response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "default-src 'self'" in CONTENT_SECURITY_POLICY and "connect-src 'none'" in CONTENT_SECURITY_POLICY
    refused = verifier.evaluate("() => fetch('/verify/').then(() => 'fetched', () => 'refused')")
    assert refused == "refused"


def test_an_oversized_file_is_refused_before_it_is_parsed(verifier):
    size = MAX_DOCUMENT_BYTES + 1
    verdict = verifier.evaluate(f"() => PortoVerify.verifyStatementBytes(new Uint8Array({size}).fill(32))"
                                ".then((r) => [r.reason, r.field])")
    assert verdict == ["TOO_LARGE", ""]
    assert python_verdict(b" " * size) == {"verdict": "failed", "reason": "TOO_LARGE", "field": ""}


def test_the_page_hashes_the_rfc9162_tree_as_its_published_vectors_say(verifier):
    vectors = json.loads(RFC_VECTORS.read_bytes())
    for proof in vectors["inclusion_proofs"]:
        leaf = vectors["node_hashes"][0][proof["leaf_index"]]
        root = vectors["roots"][proof["tree_size"]]
        computed = verifier.evaluate("""async ([leaf, data, index, size, path, root]) => {
          const bytes = (h) => new Uint8Array(h.match(/../g) || []).map((_, i) => parseInt(h.substr(2 * i, 2), 16));
          const leafHash = await PortoVerify.leafHash(bytes(data));
          const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
          const reached = await PortoVerify.verifyInclusion(leafHash, index, size, path.map(bytes), bytes(root));
          return [hex(leafHash), hex(reached)];
        }""", [leaf, vectors["leaf_inputs"][proof["leaf_index"]], proof["leaf_index"], proof["tree_size"],
               proof["path"], root])
        assert computed == [leaf, root]


def test_a_phishing_file_made_up_whole_is_not_verified_and_the_page_says_which_checks_were_not_made(verifier):
    """999,999 USDC, "paid", an invented root and anchor: consistent in itself, and signed by no Porto key."""
    choose_bytes(verifier, "statement.json", statement_file_bytes(forged_file()))
    verdict = verifier.locator("#verdict")
    expect(verdict).to_have_attribute("data-state", "not-verified")
    expect(verdict).to_have_attribute("data-reason", "NO_CHECKPOINT")
    expect(verdict).to_contain_text("Not verified")
    expect(verdict).not_to_contain_text("Verified:")
    for step in ("file", "leaf", "root"):
        expect(verifier.locator(f"#step-{step}")).to_have_attribute("data-state", "passed")
    for step in ("checkpoint", "signature", "anchor"):
        expect(verifier.locator(f"#step-{step}")).to_have_attribute("data-state", "not-made")
    expect(verifier.locator("#statement-heading")).to_have_text("The statement in this file (not verified)")


def test_a_megabyte_of_nested_arrays_is_refused_cleanly_and_the_previous_verdict_does_not_stay(verifier):
    drop_file(verifier, "valid-middle-leaf.json")
    expect(verifier.locator("#verdict")).to_have_attribute("data-state", "verified")
    choose_bytes(verifier, "nested.json", b"[" * MAX_DOCUMENT_BYTES)
    verdict = verifier.locator("#verdict")
    expect(verdict).to_have_attribute("data-state", "refused")
    expect(verdict).to_have_attribute("data-reason", "TOO_DEEP")
    expect(verdict).to_contain_text("nest deeper than 32 levels")
    expect(verifier.locator("#file-name")).to_have_text("nested.json")
    expect(verifier.locator("#step-file")).to_have_attribute("data-state", "failed")
    for step in CHECKS[1:]:
        expect(verifier.locator(f"#step-{step}")).to_have_attribute("data-state", "not-made")
    expect(verifier.locator("#statement")).to_be_hidden()


# Day lines: a statement and the parts files of its day lines.

def choose_statement_with_parts(page: Page, statement: str, parts: list[str]) -> None:
    page.set_input_files("#parts-files", [str(PARTS / name) for name in parts])
    page.set_input_files("#statement-file", str(PARTS / statement))


def expect_verified(page: Page, says: str, parts_state: str) -> None:
    """Verified, saying ``says`` of the day lines, with the parts check ``parts_state``."""
    verdict = page.locator("#verdict")
    expect(verdict).to_have_attribute("data-state", "verified")
    expect(verdict).to_contain_text(says)
    expect(page.locator("#step-parts")).to_have_attribute("data-state", parts_state)


def test_the_page_and_the_python_verifier_agree_on_every_day_line_parts_case(verifier):
    cases = parts_vectors.committed()
    assert len(cases) > 20
    for name, case in cases.items():
        statement, parts = parts_vectors.case_bytes(case)
        expected = {key: value for key, value in case.items() if key not in ("statement", "parts")}
        assert verifier.evaluate(VERIFY_WITH_PARTS, [list(statement), [list(raw) for raw in parts]]) == expected, name
        assert parts_vectors.python_verdict(statement, parts) == expected, name


def test_a_statement_with_its_parts_files_shows_each_day_line_checked_and_what_it_is_made_of(verifier, screenshots):
    case = parts_vectors.committed()["every-day-line"]
    choose_statement_with_parts(verifier, case["statement"], case["parts"])
    expect_verified(verifier, "Each of your 2 day lines is the sum of the listener-days its parts file lists", "passed")
    expect(verifier.locator("#file-name")).to_have_text("statement-artist.json with 2 parts files")
    expect(verifier.locator("#statement-lines tbody")).to_contain_text("3 listener-days (checked)")
    expect(verifier.locator("#statement-lines tbody")).to_contain_text("chunk 1 of 2025-11-08")
    checked = verifier.locator("#parts-files-checked > li")
    expect(checked).to_have_count(2)
    expect(checked.first).to_have_attribute("data-state", "passed")
    lines = sum(len(part["lines"]) for name in case["parts"]
                for part in json.loads((PARTS / name).read_bytes())["parts"])
    expect(verifier.locator(".parts-lines tbody tr")).to_have_count(lines)
    expect(checked.first.locator("tbody tr").first).to_have_text("#0work-00120.050000 USDC")
    expect(verifier.locator("#parts")).not_to_contain_text("listener-0")
    verifier.set_viewport_size({"width": 1100, "height": 900})
    verifier.screenshot(path=screenshots / "verify-day-line-parts.png", full_page=True)


def test_a_statement_given_no_parts_files_verifies_and_says_its_day_lines_were_not_checked(verifier):
    verifier.set_input_files("#statement-file", str(PARTS / "statement-artist.json"))
    expect_verified(verifier, "What 2 of your 2 day lines are made of was not checked", "not-made")
    expect(verifier.locator("#step-parts .step-detail")).to_contain_text("were given no parts file")
    expect(verifier.locator("#statement-lines tbody")).to_contain_text("(not checked)")
    expect(verifier.locator("#parts")).to_be_hidden()


@pytest.mark.parametrize(("name", "words"), [
    ("forged-amount-changed", "do not add up to the day line's amount"),
    ("forged-part-dropped", "does not list as many listener-days"),
    ("forged-part-moved-to-another-day-line", "does not list as many listener-days"),
    ("forged-lines-swapped-between-parts", "is not the one your statement commits to"),
    ("another-recipients-parts", "a day line your statement does not list"),
])
def test_a_forged_parts_file_is_refused_and_the_page_says_why_in_words(verifier, name, words):
    case = parts_vectors.committed()[name]
    choose_statement_with_parts(verifier, case["statement"], case["parts"])
    verdict = verifier.locator("#verdict")
    expect(verdict).to_have_attribute("data-state", "refused")
    expect(verdict).to_have_attribute("data-reason", case["reason"])
    expect(verdict).to_have_attribute("data-field", case["field"])
    expect(verdict).to_contain_text(words)
    for step in ("file", "leaf", "root", "checkpoint", "signature"):
        expect(verifier.locator(f"#step-{step}")).to_have_attribute("data-state", "passed")
    expect(verifier.locator("#step-parts")).to_have_attribute("data-state", "failed")
    refused = verifier.locator("#parts-files-checked > li")
    expect(refused).to_have_attribute("data-reason", case["reason"])
    expect(refused).to_contain_text(f"{case['parts'][0]}: refused, ")


def test_parts_files_dropped_with_their_statement_are_told_apart(verifier):
    case = parts_vectors.committed()["every-day-line"]
    names = [*case["parts"], case["statement"]]
    verifier.evaluate("""(files) => {
      const transfer = new DataTransfer();
      for (const [name, bytes] of files) {
        transfer.items.add(new File([new Uint8Array(bytes)], name, {type: "application/json"}));
      }
      document.getElementById("drop-zone").dispatchEvent(new DragEvent("drop", {dataTransfer: transfer, bubbles: true}));
    }""", [[name, list((PARTS / name).read_bytes())] for name in names])
    expect_verified(verifier, "Each of your 2 day lines", "passed")
    expect(verifier.locator("#file-name")).to_have_text("statement-artist.json with 2 parts files")
