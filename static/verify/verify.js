// The recipient's statement verifier: the same checks, in the same order, as
// ledger_engine/merkle/statement.py's check_statement_file (docs/merkle.md), with
// the checkpoint key this deployment pins. Plain JavaScript and WebCrypto
// (SHA-256, Ed25519); the file never leaves the browser. Nothing here recurses
// over the file before its nesting is counted, without recursion, against the
// ledger's own depth limit.
"use strict";

(function () {
  const FORMAT = JSON.parse(document.getElementById("statement-format").textContent);
  const DISPLAY = JSON.parse(document.getElementById("statement-display").textContent);
  const HEX_HASH = /^[0-9a-f]{64}$/;
  const U64_MAX = (1n << 64n) - 1n;
  const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
  const KEY_NAME = /^[!-*,-~]{1,200}$/;
  const SIZE = /^(0|[1-9][0-9]{0,15})$/;
  const SIGNATURE_PREFIX = "\u2014 ";
  const MAX_SIGNATURES = 16;
  const ED25519 = 1;

  class Rejected extends Error {
    constructor(reason, field, detail) {
      super(reason + " at " + (field || "the document") + ": " + detail);
      this.reason = reason;
      this.field = field;
      this.detail = detail;
    }
  }

  function reject(reason, field, detail) {
    throw new Rejected(reason, field, detail);
  }

  function join(field, name) {
    return field ? field + "." + name : name;
  }

  function isObject(value) {
    return value !== null && typeof value === "object" && !Array.isArray(value);
  }

  // ---- Canonical JSON (RFC 8785) for strings, safe integers, booleans, null, arrays, ASCII-keyed objects.

  function hasUnpairedSurrogate(value) {
    if (typeof value === "string") return LONE_SURROGATE.test(value);
    if (Array.isArray(value)) return value.some(hasUnpairedSurrogate);
    if (isObject(value)) return Object.keys(value).some((k) => LONE_SURROGATE.test(k) || hasUnpairedSurrogate(value[k]));
    return false;
  }

  function checkValues(value, where) {
    if (typeof value === "number") {
      if (!Number.isSafeInteger(value)) reject("NOT_CANONICAL", "", (where || "a value") + " is not a safe integer");
    } else if (Array.isArray(value)) {
      value.forEach((item, position) => checkValues(item, where + "[" + position + "]"));
    } else if (isObject(value)) {
      const keys = Object.keys(value);
      if (!keys.every((key) => /^[\x00-\x7f]*$/.test(key))) {
        reject("NOT_CANONICAL", "", (where || "the document") + " has an object key outside ASCII");
      }
      keys.sort().forEach((key) => checkValues(value[key], join(where, key)));
    }
  }

  function canonical(value) {
    if (value === null) return "null";
    if (typeof value === "boolean") return value ? "true" : "false";
    if (typeof value === "number") return String(value);
    if (typeof value === "string") return JSON.stringify(value);
    if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
    return "{" + Object.keys(value).sort().map((key) => JSON.stringify(key) + ":" + canonical(value[key])).join(",") + "}";
  }

  function sameBytes(a, b) {
    return a.length === b.length && a.every((byte, i) => byte === b[i]);
  }

  // Counts nesting over the text without recursion (document.py require_shallow): strings are skipped
  // whole, and a string that never closes ends the count (the rest is not JSON, which parsing then says).
  function requireShallow(text) {
    let depth = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (c === '"') {
        let j = i + 1;
        while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
        if (j >= text.length) return;
        i = j;
      } else if (c === "[" || c === "{") {
        depth += 1;
        if (depth > FORMAT.max_depth) reject("TOO_DEEP", "", "arrays and objects nest deeper than " + FORMAT.max_depth + " levels");
      } else if (c === "]" || c === "}") {
        depth -= 1;
      }
    }
  }

  function readDocument(bytes) {
    if (bytes.length > FORMAT.max_document_bytes) {
      reject("TOO_LARGE", "", "the file has " + bytes.length + " bytes; at most " + FORMAT.max_document_bytes + " are read");
    }
    let value;
    try {
      const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
      if (text.startsWith("\uFEFF")) reject("NOT_JSON", "", "the file starts with a byte order mark");
      requireShallow(text);
      value = JSON.parse(text);
    } catch (error) {
      if (error instanceof Rejected) throw error;
      reject("NOT_JSON", "", "the file is not UTF-8 JSON");
    }
    if (hasUnpairedSurrogate(value)) reject("NOT_JSON", "", "a string holds an unpaired surrogate");
    checkValues(value, "");
    const encoded = new TextEncoder().encode(canonical(value));
    const withNewline = new Uint8Array([...encoded, 0x0a]);
    if (!sameBytes(bytes, encoded) && !sameBytes(bytes, withNewline)) {
      reject("NOT_CANONICAL", "", "the file is not in canonical JSON (RFC 8785) form");
    }
    if (!isObject(value)) reject("MALFORMED", "", "the document is not a JSON object");
    return value;
  }

  // ---- Fields, in the order the Python verifier reads them.

  function requireFields(document, fields, where) {
    for (const name of fields) {
      if (!Object.prototype.hasOwnProperty.call(document, name)) reject("MALFORMED", join(where, name), "a required field is missing");
    }
    for (const name of Object.keys(document).sort()) {
      if (!fields.includes(name)) reject("MALFORMED", join(where, name), "an unknown field");
    }
  }

  function readObject(document, name, where) {
    if (!isObject(document[name])) reject("MALFORMED", join(where, name), "not a JSON object");
    return document[name];
  }

  function readCount(document, name, minimum, where) {
    const value = document[name];
    if (typeof value !== "number" || !Number.isInteger(value) || value < minimum) {
      reject("MALFORMED", join(where, name), "not an integer of at least " + minimum);
    }
    return value;
  }

  function readHash(value, field) {
    if (typeof value !== "string" || !HEX_HASH.test(value)) {
      reject("INVALID_HASH", field, "not a SHA-256 hash in 64 lowercase hex digits");
    }
    return hexBytes(value);
  }

  function readHashes(document, name) {
    if (!Array.isArray(document[name])) reject("MALFORMED", name, "not an array of hashes");
    return document[name].map((value, position) => readHash(value, name + "[" + position + "]"));
  }

  function readAnchor(document) {
    const anchor = readObject(document, "anchor", "");
    requireFields(anchor, FORMAT.anchor_fields, "anchor");
    const chain = anchor.chain;
    if (typeof chain !== "string" || chain.length < 1 || chain.length > FORMAT.max_chain_label) {
      reject("MALFORMED", "anchor.chain", "the chain is named in 1 to " + FORMAT.max_chain_label + " characters");
    }
    if (typeof anchor.transaction_hash !== "string" || !new RegExp(FORMAT.transaction_pattern).test(anchor.transaction_hash)) {
      reject("INVALID_HASH", "anchor.transaction_hash", "a transaction hash is 0x and 64 lowercase hex digits");
    }
    readCount(anchor, "ledger_version", 0, "anchor");
    return anchor;
  }

  // ---- The statement's shape (statement.py check_statement).

  const JSON_TYPES = { string: (v) => typeof v === "string", object: isObject, array: Array.isArray };

  function isAmountField(name) {
    return name === "amount" || name === "total" || name.endsWith("_amount");
  }

  function isAmount(value) {
    return typeof value === "string" && new RegExp(FORMAT.amount_pattern).test(value) && BigInt(value) <= U64_MAX;
  }

  function checkAmounts(value, field) {
    if (Array.isArray(value)) {
      value.forEach((item, position) => checkAmounts(item, field + "[" + position + "]"));
    } else if (isObject(value)) {
      for (const key of Object.keys(value).sort()) {
        const inner = join(field, key);
        if (isAmountField(key) && !isAmount(value[key])) {
          reject("INVALID_STATEMENT", inner, "an amount is a canonical unsigned 64-bit decimal string");
        }
        checkAmounts(value[key], inner);
      }
    }
  }

  function checkStatement(statement) {
    for (const [name, jsonType] of FORMAT.statement_fields) {
      if (!JSON_TYPES[jsonType](statement[name])) {
        reject("INVALID_STATEMENT", "statement." + name, "a statement has a " + jsonType + " " + name);
      }
    }
    if (!new RegExp(FORMAT.proof_id_pattern).test(statement.public_proof_id)) {
      reject("INVALID_STATEMENT", "statement.public_proof_id", "public_proof_id is 16 to 200 identifier characters");
    }
    if (!new RegExp(FORMAT.recipient_pattern).test(statement.recipient_id)) {
      reject("INVALID_STATEMENT", "statement.recipient_id", "recipient_id is 1 to 200 identifier characters");
    }
    statement.lines.forEach((line, position) => {
      if (!isObject(line)) reject("INVALID_STATEMENT", "statement.lines[" + position + "]", "a line is a JSON object");
    });
    if (typeof statement.payment.status !== "string") {
      reject("INVALID_STATEMENT", "statement.payment.status", "a payment has a status string");
    }
    checkAmounts(statement, "statement");
  }

  // ---- RFC 9162 hashes and inclusion verification (2.1.3.2).

  function hexBytes(hex) {
    return new Uint8Array(hex.match(/../g).map((pair) => parseInt(pair, 16)));
  }

  function hex(bytes) {
    return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
  }

  async function sha256(...parts) {
    const data = new Uint8Array(parts.reduce((total, part) => total + part.length, 0));
    let offset = 0;
    for (const part of parts) {
      data.set(part, offset);
      offset += part.length;
    }
    return new Uint8Array(await crypto.subtle.digest("SHA-256", data));
  }

  const leafHash = (data) => sha256(Uint8Array.of(0), data);
  const nodeHash = (left, right) => sha256(Uint8Array.of(1), left, right);

  function bitLength(n) {
    return n === 0n ? 0 : n.toString(2).length;
  }

  function bitCount(n) {
    return n.toString(2).split("").filter((bit) => bit === "1").length;
  }

  function inclusionPathLength(index, size) {
    const inner = bitLength(index ^ (size - 1n));
    return inner + bitCount(index >> BigInt(inner));
  }

  async function verifyInclusion(leaf, leafIndex, treeSize, path, root) {
    const index = BigInt(leafIndex);
    const size = BigInt(treeSize);
    if (index >= size) reject("INDEX_OUT_OF_RANGE", "leaf_index", "leaf " + index + " is not in a tree of " + size);
    const expected = inclusionPathLength(index, size);
    if (path.length !== expected) {
      reject("PROOF_LENGTH", "path", "the path has " + path.length + " hashes; leaf " + index + " of a tree of " + size + " needs " + expected);
    }
    let fn = index;
    let sn = size - 1n;
    let r = leaf;
    for (const p of path) {
      if (sn === 0n) reject("PROOF_LENGTH", "path", "the path is longer than the tree is high");
      if ((fn & 1n) === 1n || fn === sn) {
        r = await nodeHash(p, r);
        while ((fn & 1n) === 0n && fn !== 0n) {
          fn >>= 1n;
          sn >>= 1n;
        }
      } else {
        r = await nodeHash(r, p);
      }
      fn >>= 1n;
      sn >>= 1n;
    }
    if (sn !== 0n) reject("PROOF_LENGTH", "path", "the path ends below the root");
    if (!sameBytes(r, root)) reject("ROOT_MISMATCH", "batch_root", "the path does not lead to the batch root");
    return r;
  }

  // ---- The signed checkpoint (checkpoint.py): a C2SP signed note of the origin, the tree size and the root.

  function base64Bytes(text, length, field, detail) {
    let raw = null;
    if (/^[A-Za-z0-9+/]*={0,2}$/.test(text) && text.length % 4 === 0) {
      raw = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
    }
    if (raw === null || (length !== null && raw.length !== length) || btoa(String.fromCharCode(...raw)) !== text) {
      reject("MALFORMED", field, detail);
    }
    return raw;
  }

  function parseNote(note) {
    const field = "checkpoint";
    if (typeof note !== "string" || [...note].length > FORMAT.max_note_chars || !note.endsWith("\n")) {
      reject("MALFORMED", field, "a checkpoint is a signed note of at most " + FORMAT.max_note_chars + " characters, ending in a newline");
    }
    const split = note.lastIndexOf("\n\n");
    if (split <= 0) reject("MALFORMED", field, "a signed note is its text, a blank line, then its signature lines");
    const body = note.slice(0, split);
    const lines = body.split("\n");
    if (lines.length < 3 || !lines.every((line) => line.length > 0) || body.includes("\r")) {
      reject("MALFORMED", field, "a checkpoint's text is its origin, tree size and root hash, one a line");
    }
    if (!SIZE.test(lines[1])) reject("MALFORMED", field, "a checkpoint's tree size is a decimal number without leading zeros");
    const root = base64Bytes(lines[2], 32, field, "a checkpoint's root hash is 32 bytes in base64");
    const signatureLines = note.slice(split + 2, -1).split("\n");
    if (signatureLines.length < 1 || signatureLines.length > MAX_SIGNATURES) {
      reject("MALFORMED", field, "a signed note has 1 to " + MAX_SIGNATURES + " signature lines");
    }
    const signatures = signatureLines.map((line) => {
      const rest = line.startsWith(SIGNATURE_PREFIX) ? line.slice(SIGNATURE_PREFIX.length) : line;
      const space = rest.indexOf(" ");
      const name = space < 0 ? rest : rest.slice(0, space);
      if (!line.startsWith(SIGNATURE_PREFIX) || !KEY_NAME.test(name)) {
        reject("MALFORMED", field, "a signature line is an em dash, a space, the key name, a space and the signature in base64");
      }
      const raw = base64Bytes(space < 0 ? "" : rest.slice(space + 1), null, field, "a signature is its key hash and the signature in base64");
      if (raw.length < 5) reject("MALFORMED", field, "a signature is a 4-byte key hash and the signature");
      return { name: name, keyHash: hex(raw.slice(0, 4)), signature: raw.slice(4) };
    });
    return { origin: lines[0], size: BigInt(lines[1]), root: root, signed: new TextEncoder().encode(body + "\n"), signatures: signatures };
  }

  async function verifyNote(checkpoint, key) {
    const ours = checkpoint.signatures.find((line) => line.name === key.name && line.keyHash === key.key_hash);
    if (!ours) {
      const names = [...new Set(checkpoint.signatures.map((line) => line.name + " (" + line.keyHash + ")"))].sort().join(", ");
      reject("UNKNOWN_KEY", "checkpoint", "the checkpoint is signed by " + names + ", not by the pinned key " + key.name + " (" + key.key_hash + ")");
    }
    let valid = false;
    try {
      const publicKey = await crypto.subtle.importKey("raw", hexBytes(key.public_key), { name: "Ed25519" }, false, ["verify"]);
      valid = await crypto.subtle.verify({ name: "Ed25519" }, publicKey, ours.signature, checkpoint.signed);
    } catch (error) {
      valid = false;
    }
    if (!valid) reject("SIGNATURE_INVALID", "checkpoint", "the signature by " + key.name + " does not match the checkpoint");
  }

  // ---- The statement file, check by check: each passed, failed or not made.

  function readFile(bytes) {
    const document = readDocument(bytes);
    if (!("version" in document)) reject("MALFORMED", "version", "the document has no version");
    const signed = document.version === FORMAT.file_version;
    if (!signed && document.version !== FORMAT.unsigned_file_version) {
      reject("UNSUPPORTED_VERSION", "version", "unknown version; this verifier reads " + FORMAT.file_version + ", " + FORMAT.unsigned_file_version);
    }
    requireFields(document, signed ? FORMAT.file_fields : FORMAT.unsigned_file_fields, "");
    const statement = readObject(document, "statement", "");
    readCount(document, "leaf_index", 0, "");
    readCount(document, "tree_size", 1, "");
    readHash(document.leaf_hash, "leaf_hash");
    readHashes(document, "path");
    readHash(document.batch_root, "batch_root");
    const checkpoint = signed ? parseNote(document.checkpoint) : null;
    readAnchor(document);
    checkStatement(statement);
    return { document: document, statement: statement, checkpoint: checkpoint };
  }

  function checkByHand(document) {
    const anchor = document.anchor;
    return "This page cannot reach a chain. On " + anchor.chain + ", look up transaction " + anchor.transaction_hash +
      " (version " + anchor.ledger_version + "): it must be a call to commitments::anchor from Porto's published " +
      "committer address, with hash " + document.batch_root + " and count " + document.tree_size + ".";
  }

  async function runChecks(bytes, checks, found) {
    const passed = (detail) => checks.push({ check: FORMAT.checks[checks.length], result: "passed", reason: "", detail: detail });
    const notMade = (reason, detail) => checks.push({ check: FORMAT.checks[checks.length], result: "not made", reason: reason, detail: detail });
    const { document, statement, checkpoint } = readFile(bytes);
    found.statement = statement;
    passed("Canonical JSON, version " + document.version + ", every field present and well formed.");
    const leaf = await leafHash(new TextEncoder().encode(FORMAT.leaf_domain + canonical(statement)));
    if (!sameBytes(leaf, hexBytes(document.leaf_hash))) {
      reject("LEAF_MISMATCH", "statement", "the statement does not hash to the leaf hash: it was changed");
    }
    passed("Computed leaf hash " + hex(leaf) + ": the file's leaf hash.");
    await verifyInclusion(leaf, document.leaf_index, document.tree_size, document.path.map(hexBytes), hexBytes(document.batch_root));
    passed("Leaf " + document.leaf_index + " of " + document.tree_size + " statements, " + document.path.length +
      " hashes in the path, reaches the batch root " + document.batch_root + ".");
    if (checkpoint === null) {
      const why = "The file carries no signed checkpoint (a version 1 file): nothing vouches for its batch root.";
      notMade("NO_CHECKPOINT", why);
      notMade("NO_CHECKPOINT", why);
    } else {
      if (checkpoint.size !== BigInt(document.tree_size) || hex(checkpoint.root) !== document.batch_root) {
        reject("CHECKPOINT_MISMATCH", "checkpoint", "the checkpoint signs " + checkpoint.size + " statements under root " +
          hex(checkpoint.root) + ", not this file's");
      }
      passed("The checkpoint of " + checkpoint.origin + " names this batch root and " + document.tree_size + " statements.");
      if (!FORMAT.verifier_key) {
        notMade("NO_VERIFIER_KEY", "This page has no pinned key, so nobody's signature could be checked.");
      } else {
        await verifyNote(checkpoint, FORMAT.verifier_key);
        passed("Signed by Porto's key " + FORMAT.verifier_key.name + " (" + FORMAT.verifier_key.key_hash + "), the key this page pins.");
      }
    }
    notMade("BY_HAND", checkByHand(document));
    return { leaf_index: document.leaf_index, tree_size: document.tree_size, origin: checkpoint && checkpoint.origin };
  }

  async function verifyStatementBytes(bytes) {
    const checks = [];
    const found = { statement: null };
    try {
      const result = await runChecks(bytes, checks, found);
      const unmade = checks.find((check) => check.result === "not made" && check.check !== "anchor");
      return Object.assign(result, unmade
        ? { verdict: "not verified", reason: unmade.reason, field: "checkpoint", detail: unmade.detail }
        : { verdict: "verified" }, { checks: checks, statement: found.statement });
    } catch (error) {
      if (!(error instanceof Rejected)) throw error;
      checks.push({ check: FORMAT.checks[checks.length], result: "failed", reason: error.reason, detail: error.detail });
      while (checks.length < FORMAT.checks.length) {
        checks.push({ check: FORMAT.checks[checks.length], result: "not made", reason: "", detail: "Not reached: an earlier check failed." });
      }
      return { verdict: "failed", reason: error.reason, field: error.field, detail: error.detail, checks: checks, statement: found.statement };
    }
  }

  // ---- The page.

  const LABELS = {
    file: "the file is a complete statement file", leaf: "your statement hashes to its leaf",
    root: "the proof leads from the leaf to the batch root", checkpoint: "the signed checkpoint names this batch root",
    signature: "Porto's pinned key signed the checkpoint", anchor: "the batch root is the one anchored on chain",
  };

  function text(id, value) {
    document.getElementById(id).textContent = value;
  }

  function setStep(name, state, detail) {
    const item = document.getElementById("step-" + name);
    item.dataset.state = state;
    item.querySelector(".step-state").textContent = state === "pending" ? "" : state.replace("-", " ");
    item.querySelector(".step-detail").textContent = detail;
  }

  function showChecks(result) {
    for (const check of result.checks) {
      const failed = check.result === "failed";
      setStep(check.check, check.result.replace(" ", "-"),
        failed ? check.reason + (result.field ? " at " + result.field : "") + ": " + check.detail + "." : check.detail);
    }
  }

  function showVerdict(result) {
    const verdict = document.getElementById("verdict");
    const failed = result.checks.find((check) => check.result === "failed");
    verdict.dataset.state = { verified: "verified", failed: "refused", "not verified": "not-verified" }[result.verdict];
    verdict.dataset.reason = result.reason || "";
    verdict.dataset.field = result.field || "";
    const passed = result.checks.filter((check) => check.result === "passed").map((check) => LABELS[check.check]);
    if (result.verdict === "verified") {
      verdict.textContent = "Verified: Porto's key " + FORMAT.verifier_key.name + " signed the batch root, and your statement is leaf " +
        result.leaf_index + " of the " + result.tree_size + " statements under it. One check is left to you: the anchor on chain.";
    } else if (failed) {
      verdict.textContent = "Not verified: a check failed (" + LABELS[failed.check] + "): " + result.reason +
        (result.field ? " at " + result.field : "") + ", " + result.detail + ".";
    } else {
      const unmade = result.checks.filter((check) => check.result === "not made" && check.check !== "anchor");
      verdict.textContent = "Not verified: " + result.detail + " Passed: " + (passed.join("; ") || "none") +
        ". Not made: " + unmade.map((check) => LABELS[check.check]).join("; ") + ".";
    }
  }

  function display(value) {
    return typeof value === "string" ? value : canonical(value);
  }

  // What a recipient reads: amounts in the asset's unit (minor units on hover), days and times as UTC dates,
  // listening as hours and minutes. The checks above read the file's own values; this only shows them.
  const DAY_MS = 86400000;
  const COLUMN_LABELS = { title: "Title", work_id: "Work", role: "Role", node_id: "Node", day: "Day",
    listened_ms: "Listened", amount: "Amount" };
  const COLUMN_ORDER = Object.keys(COLUMN_LABELS);

  function inUnits(minorUnits, asset) {
    const places = DISPLAY.asset_places[asset];
    const value = BigInt(String(minorUnits));
    if (places === undefined) return value.toString() + " minor units of " + asset;
    const scale = 10n ** BigInt(places);
    const whole = (value < 0n ? -value : value) / scale;
    const fraction = ((value < 0n ? -value : value) % scale).toString().padStart(places, "0");
    const grouped = whole.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    return (value < 0n ? "-" : "") + grouped + (places ? "." + fraction : "") + " " + asset;
  }

  function utcDate(milliseconds) {
    return new Date(Number(milliseconds)).toISOString().slice(0, 10);
  }

  function duration(milliseconds) {
    const minutes = Math.round(Number(milliseconds) / 60000);
    const hours = Math.floor(minutes / 60);
    return hours ? hours + " h " + (minutes % 60) + " min" : minutes + " min";
  }

  function moneyNode(minorUnits, asset) {
    return Object.assign(document.createElement("span"), {
      textContent: inUnits(minorUnits, asset), title: String(minorUnits) + " minor units" });
  }

  function cellNode(column, value, asset) {
    if (column === "amount") return moneyNode(value, asset);
    const shown = column === "day" ? utcDate(Number(value) * DAY_MS)
      : column === "listened_ms" ? duration(value)
        : column.endsWith("_ms") ? utcDate(value) : display(value);
    return document.createTextNode(shown);
  }

  function periodText(period) {
    const parts = [];
    if (period.window_start_ms !== undefined && period.window_end_ms !== undefined) {
      // The window ends before its end time: its last day is the day before.
      parts.push(utcDate(period.window_start_ms) + " to " + utcDate(Number(period.window_end_ms) - 1) + " (UTC)");
    }
    Object.keys(period).sort().filter((name) => !name.startsWith("window_")).forEach((name) => {
      parts.push(name.replace(/_/g, " ") + " " + display(period[name]));
    });
    return parts.join("; ");
  }

  function paymentNodes(payment, asset) {
    const when = " when this file was made";
    if (payment.status !== "paid") {
      return [document.createTextNode((payment.status === "unpaid" ? "Not paid yet" : payment.status) + when +
        " (a later file shows the payment once it lands).")];
    }
    const nodes = [document.createTextNode("Paid" + when + ": ")];
    if (payment.paid_amount !== undefined) nodes.push(moneyNode(payment.paid_amount, asset));
    if (payment.transaction_hash) nodes.push(document.createTextNode(", transaction " + payment.transaction_hash));
    return nodes;
  }

  function showStatement(statement, verified) {
    const section = document.getElementById("statement");
    section.hidden = !statement;
    if (!statement) return;
    const asset = statement.asset || "";
    text("statement-heading", verified ? "Your statement" : "The statement in this file (not verified)");
    text("statement-recipient", statement.recipient_id + (statement.role ? " (" + statement.role + ")" : ""));
    text("statement-proof-id", statement.public_proof_id);
    text("statement-period", periodText(statement.period));
    document.getElementById("statement-total").replaceChildren(
      ...(statement.total === undefined ? [] : [moneyNode(statement.total, asset)]));
    document.getElementById("statement-payment").replaceChildren(...paymentNodes(statement.payment, asset));
    const present = [...new Set(statement.lines.flatMap((line) => Object.keys(line)))];
    const columns = [...COLUMN_ORDER.filter((column) => present.includes(column)),
      ...present.filter((column) => !COLUMN_ORDER.includes(column)).sort()];
    const head = document.querySelector("#statement-lines thead tr");
    const body = document.querySelector("#statement-lines tbody");
    head.replaceChildren(...columns.map((column) => Object.assign(document.createElement("th"), {
      scope: "col", textContent: COLUMN_LABELS[column] || column.replace(/_/g, " ") })));
    body.replaceChildren(...statement.lines.map((line) => {
      const row = document.createElement("tr");
      row.replaceChildren(...columns.map((column) => {
        const cell = document.createElement("td");
        if (line[column] !== undefined) cell.append(cellNode(column, line[column], asset));
        return cell;
      }));
      return row;
    }));
  }

  function clearVerdict(name) {
    const verdict = document.getElementById("verdict");
    verdict.dataset.state = "checking";
    verdict.dataset.reason = "";
    verdict.dataset.field = "";
    verdict.textContent = "Checking " + name + "…";
    FORMAT.checks.forEach((check) => setStep(check, "pending", ""));
    showStatement(null, false);
  }

  let latest = 0;

  async function check(file) {
    const mine = ++latest;  // a file chosen later replaces this one's verdict, whichever finishes first
    clearVerdict(file.name);
    text("file-name", file.name);
    let result;
    try {
      result = await verifyStatementBytes(new Uint8Array(await file.arrayBuffer()));
    } catch (error) {
      if (mine !== latest) return;
      const verdict = document.getElementById("verdict");
      verdict.dataset.state = "error";
      verdict.textContent = "Not verified: this page could not check the file (" + error.message + ").";
      return;
    }
    if (mine !== latest) return;
    showChecks(result);
    showVerdict(result);
    showStatement(result.statement, result.verdict === "verified");
  }

  function start() {
    if (!window.crypto || !crypto.subtle) {
      text("verdict", "This page needs a secure connection (HTTPS) to use the browser's SHA-256 and Ed25519.");
      return;
    }
    const input = document.getElementById("statement-file");
    const zone = document.getElementById("drop-zone");
    input.addEventListener("change", () => input.files.length && check(input.files[0]));
    zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.dataset.over = "true"; });
    zone.addEventListener("dragleave", () => { delete zone.dataset.over; });
    zone.addEventListener("drop", (event) => {
      event.preventDefault();
      delete zone.dataset.over;
      if (event.dataTransfer.files.length) check(event.dataTransfer.files[0]);
    });
    document.body.dataset.ready = "true";
  }

  window.PortoVerify = { verifyStatementBytes, verifyInclusion, canonical, leafHash, parseNote };
  start();
})();
