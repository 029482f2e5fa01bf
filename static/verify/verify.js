// The recipient's statement verifier: the same checks, in the same order, as
// ledger_engine/merkle/statement.py's verify_statement_file (docs/merkle.md).
// Plain JavaScript and WebCrypto; the file never leaves the browser.
"use strict";

(function () {
  const FORMAT = JSON.parse(document.getElementById("statement-format").textContent);
  const HEX_HASH = /^[0-9a-f]{64}$/;
  const U64_MAX = (1n << 64n) - 1n;
  const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
  const STEP_OF = {
    TOO_LARGE: "file", NOT_JSON: "file", NOT_CANONICAL: "file", MALFORMED: "file", UNSUPPORTED_VERSION: "file",
    INVALID_HASH: "file", INVALID_STATEMENT: "file", LEAF_MISMATCH: "leaf",
    INDEX_OUT_OF_RANGE: "root", PROOF_LENGTH: "root", ROOT_MISMATCH: "root",
  };

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

  function readDocument(bytes) {
    if (bytes.length > FORMAT.max_document_bytes) {
      reject("TOO_LARGE", "", "the file has " + bytes.length + " bytes; at most " + FORMAT.max_document_bytes + " are read");
    }
    let value;
    try {
      const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
      if (text.startsWith("\uFEFF")) reject("NOT_JSON", "", "the file starts with a byte order mark");
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

  // ---- The statement file, step by step.

  async function verifyStatementBytes(bytes) {
    const steps = { file: {}, leaf: {}, root: {}, anchor: {} };
    try {
      const document = readDocument(bytes);
      if (!("version" in document)) reject("MALFORMED", "version", "the document has no version");
      if (document.version !== FORMAT.file_version) {
        reject("UNSUPPORTED_VERSION", "version", "unknown version; this verifier reads " + FORMAT.file_version);
      }
      requireFields(document, FORMAT.file_fields, "");
      const statement = readObject(document, "statement", "");
      const leafIndex = readCount(document, "leaf_index", 0, "");
      const treeSize = readCount(document, "tree_size", 1, "");
      const claimedLeaf = readHash(document.leaf_hash, "leaf_hash");
      const path = readHashes(document, "path");
      const batchRoot = readHash(document.batch_root, "batch_root");
      const anchor = readAnchor(document);
      checkStatement(statement);
      steps.file = { statement: statement };

      const leafData = new TextEncoder().encode(FORMAT.leaf_domain + canonical(statement));
      const computedLeaf = await leafHash(leafData);
      steps.leaf = { computed: hex(computedLeaf), claimed: document.leaf_hash };
      if (!sameBytes(computedLeaf, claimedLeaf)) {
        reject("LEAF_MISMATCH", "statement", "the statement does not hash to the leaf hash: it was changed");
      }
      steps.root = { leafIndex: leafIndex, treeSize: treeSize, pathLength: path.length, claimed: document.batch_root };
      await verifyInclusion(claimedLeaf, leafIndex, treeSize, path, batchRoot);
      steps.anchor = { anchor: anchor, root: document.batch_root, count: treeSize };
      return { ok: true, leaf_index: leafIndex, tree_size: treeSize, steps: steps };
    } catch (error) {
      if (!(error instanceof Rejected)) throw error;
      return { ok: false, reason: error.reason, field: error.field, detail: error.detail, step: STEP_OF[error.reason], steps: steps };
    }
  }

  // ---- The page.

  const ORDER = ["file", "leaf", "root", "anchor"];

  function text(id, value) {
    document.getElementById(id).textContent = value;
  }

  function setStep(name, state, detail) {
    const item = document.getElementById("step-" + name);
    item.dataset.state = state;
    item.querySelector(".step-state").textContent = { passed: "passed", failed: "failed", manual: "check by hand", skipped: "not reached" }[state];
    item.querySelector(".step-detail").textContent = detail;
  }

  function stepDetails(result) {
    const s = result.steps;
    return {
      file: "Canonical JSON, version " + FORMAT.file_version + ", every field present and well formed.",
      leaf: "Computed leaf hash " + s.leaf.computed + "; the file's leaf hash is " + s.leaf.claimed + ".",
      root: s.root.pathLength === undefined ? "" : "Leaf " + s.root.leafIndex + " of " + s.root.treeSize + " statements, " + s.root.pathLength +
        " hashes in the path, reaches the batch root " + s.root.claimed + ".",
      anchor: s.anchor.anchor ? "This page cannot reach a chain. On " + s.anchor.anchor.chain + ", look up transaction " +
        s.anchor.anchor.transaction_hash + " (version " + s.anchor.anchor.ledger_version + "): it must be a call to " +
        "commitments::anchor from Porto's published committer address, with hash " + s.anchor.root + " and count " +
        s.anchor.count + "." : "",
    };
  }

  function showSteps(result) {
    const details = stepDetails(result);
    const failedAt = result.ok ? ORDER.length : ORDER.indexOf(result.step);
    ORDER.forEach((name, position) => {
      if (position < failedAt) setStep(name, name === "anchor" ? "manual" : "passed", details[name]);
      else if (position === failedAt) setStep(name, "failed", result.reason + (result.field ? " at " + result.field : "") + ": " + result.detail);
      else setStep(name, "skipped", "");
    });
  }

  function showVerdict(result) {
    const verdict = document.getElementById("verdict");
    verdict.dataset.state = result.ok ? "verified" : "refused";
    verdict.dataset.reason = result.ok ? "" : result.reason;
    verdict.dataset.field = result.ok ? "" : result.field;
    verdict.textContent = result.ok
      ? "Verified: your statement is leaf " + result.leaf_index + " of the " + result.tree_size +
        " statements under the batch root. One check is left to you: step 4."
      : "Not verified (" + result.reason + (result.field ? " at " + result.field : "") + "): " + result.detail + ".";
  }

  function display(value) {
    return typeof value === "string" ? value : canonical(value);
  }

  function showStatement(statement, verified) {
    const section = document.getElementById("statement");
    section.hidden = !statement;
    if (!statement) return;
    text("statement-heading", verified ? "Your statement" : "The statement in this file (not verified)");
    text("statement-recipient", statement.recipient_id);
    text("statement-proof-id", statement.public_proof_id);
    text("statement-period", Object.keys(statement.period).sort().map((key) => key + ": " + display(statement.period[key])).join(", "));
    text("statement-total", statement.total === undefined ? "" : statement.total + (statement.asset ? " " + statement.asset : ""));
    text("statement-payment", statement.payment.status);
    const columns = [...new Set(statement.lines.flatMap((line) => Object.keys(line)))].sort();
    const head = document.querySelector("#statement-lines thead tr");
    const body = document.querySelector("#statement-lines tbody");
    head.replaceChildren(...columns.map((column) => Object.assign(document.createElement("th"), { textContent: column })));
    body.replaceChildren(...statement.lines.map((line) => {
      const row = document.createElement("tr");
      row.replaceChildren(...columns.map((column) => Object.assign(document.createElement("td"), {
        textContent: line[column] === undefined ? "" : display(line[column]),
      })));
      return row;
    }));
  }

  async function check(file) {
    text("file-name", file.name);
    const result = await verifyStatementBytes(new Uint8Array(await file.arrayBuffer()));
    showSteps(result);
    showVerdict(result);
    showStatement(result.steps.file.statement || null, result.ok);
  }

  function start() {
    if (!window.crypto || !crypto.subtle) {
      text("verdict", "This page needs a secure connection (HTTPS) to use the browser's SHA-256.");
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

  window.PortoVerify = { verifyStatementBytes, verifyInclusion, canonical, leafHash };
  start();
})();
