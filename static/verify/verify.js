// The recipient's statement verifier: the same checks, in the same order, as
// ledger_engine/merkle/statement.py's check_statement_file (docs/merkle.md), with
// the checkpoint key this deployment pins, and of each parts file given, as
// ledger_engine/merkle/parts_file.py checks it. Plain JavaScript and WebCrypto
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

  function readDocument(bytes, maxBytes) {
    if (bytes.length > maxBytes) {
      reject("TOO_LARGE", "", "the file has " + bytes.length + " bytes; at most " + maxBytes + " are read");
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
    for (const [name, jsonType] of FORMAT.optional_statement_fields) {
      if (Object.hasOwn(statement, name) && !JSON_TYPES[jsonType](statement[name])) {
        reject("INVALID_STATEMENT", "statement." + name, "a statement's " + name + ", when given, is a " + jsonType);
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
    checkDayLines(statement);
  }

  // ---- Day lines and their parts files (parts_file.py): each file against the day line it names.

  const PARTS = FORMAT.parts;

  function has(value, name) {
    return Object.prototype.hasOwnProperty.call(value, name);
  }

  function isHash(value) {
    return typeof value === "string" && HEX_HASH.test(value);
  }

  function hasExactly(value, fields) {
    return isObject(value) && canonical(Object.keys(value).sort()) === canonical([...fields].sort());
  }

  function statementShape(condition, field, detail) {
    if (!condition) reject("INVALID_STATEMENT", field, detail);
  }

  function checkDayLines(statement) {
    const seen = new Set();
    statement.lines.forEach((line, position) => {
      if (!has(line, "artifact") && !has(line, "parts")) return;
      const where = "statement.lines[" + position + "]";
      statementShape(typeof line.line_id === "string" && !seen.has(line.line_id), where + ".line_id",
        "a day line has a line ID no other day line of the statement has");
      seen.add(line.line_id);
      const artifact = line.artifact;
      statementShape(hasExactly(artifact, PARTS.artifact_fields), where + ".artifact", "a day line's artifact is its chunk's day, number and hash");
      for (const name of ["day", "chunk"]) {
        statementShape(Number.isInteger(artifact[name]) && artifact[name] >= 0, where + ".artifact." + name, "the chunk's " + name + " is an integer of at least 0");
      }
      statementShape(isHash(artifact.hash), where + ".artifact.hash", "the chunk's hash is 64 lowercase hex");
      const parts = line.parts;
      statementShape(hasExactly(parts, ["count", "digest"]), where + ".parts", "a day line commits to its parts' count and digest");
      statementShape(Number.isInteger(parts.count) && parts.count >= 1, where + ".parts.count", "a day line has at least one part");
      statementShape(isHash(parts.digest), where + ".parts.digest", "a digest is 64 lowercase hex digits");
    });
  }

  function statementDayLines(statement) {
    return new Map(statement.lines.filter((line) => has(line, "parts")).map((line) => [line.line_id, line]));
  }

  function readText(value, name, where) {
    if (typeof value[name] !== "string" || !value[name]) reject("MALFORMED", join(where, name), "not a non-empty string");
  }

  function readAmount(value, name, where) {
    if (!isAmount(value[name])) reject("MALFORMED", join(where, name), "an amount is a canonical unsigned 64-bit decimal string");
  }

  function readDayLine(document) {
    const dayLine = readObject(document, "day_line", "");
    requireFields(dayLine, PARTS.day_line_fields, "day_line");
    readText(dayLine, "line_id", "day_line");
    const artifact = readObject(dayLine, "artifact", "day_line");
    requireFields(artifact, PARTS.artifact_fields, "day_line.artifact");
    readCount(artifact, "day", 0, "day_line.artifact");
    readCount(artifact, "chunk", 0, "day_line.artifact");
    readHash(artifact.hash, "day_line.artifact.hash");
    if (typeof dayLine.role !== "string" || !has(PARTS.reference_by_role, dayLine.role)) {
      reject("MALFORMED", "day_line.role", "a role is one of " + Object.keys(PARTS.reference_by_role).join(", "));
    }
    if (dayLine.recipient_id !== null) readText(dayLine, "recipient_id", "day_line");
    readAmount(dayLine, "amount", "day_line");
    return dayLine.role;
  }

  function readPartLines(part, fields, where) {
    const lines = part.lines;
    if (!Array.isArray(lines) || !lines.length) reject("MALFORMED", where + ".lines", "a part has at least one line");
    lines.forEach((line, position) => {
      const inner = where + ".lines[" + position + "]";
      if (!isObject(line)) reject("MALFORMED", inner, "a line is a JSON object");
      requireFields(line, fields, inner);
      fields.slice(0, -1).forEach((name) => readText(line, name, inner));
      readAmount(line, "amount", inner);
    });
  }

  function readParts(document, role) {
    if (!Array.isArray(document.parts)) reject("MALFORMED", "parts", "not an array of parts");
    const reference = PARTS.reference_by_role[role];
    const fields = reference === null ? ["amount"] : [reference, "amount"];
    let previous = -1;
    document.parts.forEach((part, position) => {
      const where = "parts[" + position + "]";
      if (!isObject(part)) reject("MALFORMED", where, "a part is a JSON object");
      requireFields(part, PARTS.part_fields, where);
      if (readCount(part, "position", 0, where) <= previous) {
        reject("MALFORMED", where + ".position", "parts are in increasing position order, each once");
      }
      previous = part.position;
      readPartLines(part, fields, where);
    });
  }

  function readPartsFile(bytes) {
    const document = readDocument(bytes, PARTS.max_bytes);
    if (!("version" in document)) reject("MALFORMED", "version", "the document has no version");
    if (document.version !== PARTS.version) {
      reject("UNSUPPORTED_VERSION", "version", "unknown version; this verifier reads " + PARTS.version);
    }
    requireFields(document, PARTS.file_fields, "");
    const role = readDayLine(document);
    readCount(document, "count", 1, "");
    readParts(document, role);
    return document;
  }

  function sameValue(a, b) {
    return a !== undefined && b !== undefined && canonical(a) === canonical(b);
  }

  async function checkPartsFile(bytes, statement) {
    const document = readPartsFile(bytes);
    const dayLine = document.day_line;
    const line = statementDayLines(statement).get(dayLine.line_id);
    if (!line) reject("PARTS_NOT_IN_STATEMENT", "day_line.line_id", "the statement lists no day line " + dayLine.line_id);
    for (const name of ["artifact", "role", "amount"]) {
      if (!sameValue(dayLine[name], line[name])) {
        reject("PARTS_DAY_LINE_MISMATCH", "day_line." + name, "the statement's day line " + line.line_id + " has another " + name);
      }
    }
    if (dayLine.recipient_id !== statement.recipient_id) {
      reject("PARTS_DAY_LINE_MISMATCH", "day_line.recipient_id", "the day line pays " + dayLine.recipient_id +
        ", not the statement's recipient " + statement.recipient_id);
    }
    const committed = line.parts.count;
    if (document.count !== committed) {
      reject("PARTS_COUNT_MISMATCH", "count", "the file counts " + document.count + " parts; the statement commits to " + committed);
    }
    if (document.parts.length !== committed) {
      reject("PARTS_COUNT_MISMATCH", "parts", "the file lists " + document.parts.length + " parts; the statement commits to " + committed);
    }
    const total = document.parts.reduce((sum, part) => part.lines.reduce((inner, l) => inner + BigInt(l.amount), sum), 0n);
    if (total !== BigInt(line.amount)) {
      reject("PARTS_SUM_MISMATCH", "parts", "the parts sum to " + total + ", not to the day line's " + line.amount);
    }
    const digest = hex(await sha256(new TextEncoder().encode(PARTS.domain + canonical(document))));
    if (digest !== line.parts.digest) {
      reject("PARTS_DIGEST_MISMATCH", "", "the file does not hash to the digest the statement commits to for its day line: its parts were changed");
    }
    return document;
  }

  function namedLineId(bytes, statement) {
    try {
      const id = readPartsFile(bytes).day_line.line_id;
      return statementDayLines(statement).has(id) ? id : null;
    } catch (error) {
      if (error instanceof Rejected) return null;
      throw error;
    }
  }

  async function fileOutcome(number, bytes, statement, documents) {
    try {
      const document = await checkPartsFile(bytes, statement);
      const id = document.day_line.line_id;
      documents.set(id, document);
      return { file: number, line_id: id, result: "passed", reason: "", field: "",
        detail: "the parts of day line " + id + ": count, sum and digest as the statement commits to" };
    } catch (error) {
      if (!(error instanceof Rejected)) throw error;
      return { file: number, line_id: namedLineId(bytes, statement), result: "failed", reason: error.reason,
        field: error.field, detail: error.detail };
    }
  }

  async function checkPartsFiles(statement, files, documents) {
    const outcomes = [];
    for (let number = 0; number < files.length; number++) outcomes.push(await fileOutcome(number, files[number], statement, documents));
    const byLine = new Map();
    for (const outcome of outcomes) {
      if (outcome.line_id !== null && byLine.get(outcome.line_id) !== "failed") byLine.set(outcome.line_id, outcome.result);
    }
    const dayLines = [...statementDayLines(statement).values()].map((line) => ({ line_id: line.line_id, amount: line.amount,
      count: line.parts.count, result: byLine.get(line.line_id) || "not made" }));
    return { parts_files: outcomes, day_lines: dayLines };
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
    const document = readDocument(bytes, FORMAT.max_document_bytes);
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

  async function checkParts(statement, partsFiles, found, passed, notMade) {
    Object.assign(found, await checkPartsFiles(statement, partsFiles, found.documents));
    const refused = found.parts_files.find((outcome) => outcome.result === "failed");
    if (refused) {
      const where = "parts_files[" + refused.file + "]";
      reject(refused.reason, refused.field ? where + "." + refused.field : where, "parts file " + (refused.file + 1) + ": " + refused.detail);
    }
    const unlinked = found.day_lines.filter((line) => line.result !== "passed");
    if (!found.day_lines.length) {
      notMade("NO_DAY_LINES", "Your statement has no day lines, so it has no parts to check.");
    } else if (unlinked.length) {
      notMade("NO_PARTS_FILE", unlinked.length + " of your statement's " + found.day_lines.length +
        " day lines were given no parts file: what they are made of was not checked.");
    } else {
      passed("Each of your statement's " + found.day_lines.length + " day lines is the sum of the parts its file lists, the parts your statement commits to.");
    }
  }

  async function runChecks(bytes, partsFiles, checks, found) {
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
    await checkParts(statement, partsFiles, found, passed, notMade);
    notMade("BY_HAND", checkByHand(document));
    return { leaf_index: document.leaf_index, tree_size: document.tree_size, origin: checkpoint && checkpoint.origin };
  }

  // partsFiles: the bytes of each parts file given, checked against the day line each names.
  async function verifyStatementBytes(bytes, partsFiles = []) {
    const checks = [];
    const found = { statement: null, parts_files: [], day_lines: [], documents: new Map() };
    const linked = () => ({ checks: checks, statement: found.statement, parts_files: found.parts_files,
      day_lines: found.day_lines, documents: found.documents });
    try {
      const result = await runChecks(bytes, partsFiles, checks, found);
      const unmade = checks.find((check) => check.result === "not made" && !FORMAT.optional_checks.includes(check.check));
      return Object.assign(result, unmade
        ? { verdict: "not verified", reason: unmade.reason, field: "checkpoint", detail: unmade.detail }
        : { verdict: "verified" }, linked());
    } catch (error) {
      if (!(error instanceof Rejected)) throw error;
      checks.push({ check: FORMAT.checks[checks.length], result: "failed", reason: error.reason, detail: error.detail });
      while (checks.length < FORMAT.checks.length) {
        checks.push({ check: FORMAT.checks[checks.length], result: "not made", reason: "", detail: "Not reached: an earlier check failed." });
      }
      return Object.assign({ verdict: "failed", reason: error.reason, field: error.field, detail: error.detail }, linked());
    }
  }

  // ---- The page.

  const LABELS = {
    file: "the file is a complete statement file", leaf: "your statement hashes to its leaf",
    root: "the proof leads from the leaf to the batch root", checkpoint: "the signed checkpoint names this batch root",
    signature: "Porto's pinned key signed the checkpoint",
    parts: "each day line is the sum of the listener-days its parts file lists",
    anchor: "the batch root is the one anchored on chain",
  };
  // A refused parts file, in words: what the recipient holds is not what Porto committed to, and how.
  const PARTS_REASONS = {
    PARTS_NOT_IN_STATEMENT: "this parts file is for a day line your statement does not list",
    PARTS_DAY_LINE_MISMATCH: "this parts file describes its day line otherwise than your statement does (its chunk, role, amount or recipient)",
    PARTS_COUNT_MISMATCH: "this parts file does not list as many listener-days as your statement says the day line is made of",
    PARTS_SUM_MISMATCH: "the listener-days in this parts file do not add up to the day line's amount",
    PARTS_DIGEST_MISMATCH: "this parts file is not the one your statement commits to: its listener-days were changed",
  };

  function inWords(reason) {
    return PARTS_REASONS[reason] || "this parts file is damaged or is not a parts file";
  }

  function text(id, value) {
    document.getElementById(id).textContent = value;
  }

  function setStep(name, state, detail, reason) {
    const item = document.getElementById("step-" + name);
    item.dataset.state = state;
    item.dataset.reason = reason || "";
    item.querySelector(".step-state").textContent = state === "pending" ? "" : state.replace("-", " ");
    item.querySelector(".step-detail").textContent = detail;
  }

  function showChecks(result) {
    for (const check of result.checks) {
      const failed = check.result === "failed";
      setStep(check.check, check.result.replace(" ", "-"),
        failed ? check.reason + (result.field ? " at " + result.field : "") + ": " + check.detail + "." : check.detail,
        check.reason);
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
        result.leaf_index + " of the " + result.tree_size + " statements under it. " + partsSentence(result) +
        "One check is left to you: the anchor on chain.";
    } else if (failed) {
      verdict.textContent = "Not verified: a check failed (" + LABELS[failed.check] + "): " +
        (failed.check === "parts" ? inWords(result.reason) + ", " : "") + result.reason +
        (result.field ? " at " + result.field : "") + ", " + result.detail + ".";
    } else {
      const unmade = result.checks.filter((check) => check.result === "not made" && !FORMAT.optional_checks.includes(check.check));
      verdict.textContent = "Not verified: " + result.detail + " Passed: " + (passed.join("; ") || "none") +
        ". Not made: " + unmade.map((check) => LABELS[check.check]).join("; ") + ".";
    }
  }

  function partsSentence(result) {
    const lines = result.day_lines;
    if (!lines.length) return "";
    const checked = lines.filter((line) => line.result === "passed").length;
    if (checked === lines.length) {
      return "Each of your " + lines.length + " day lines is the sum of the listener-days its parts file lists, as your statement commits to. ";
    }
    return "What " + (lines.length - checked) + " of your " + lines.length + " day lines are made of was not checked: " +
      "add their parts files to check them. ";
  }

  function display(value) {
    return typeof value === "string" ? value : canonical(value);
  }

  // What a recipient reads: amounts in the asset's unit (minor units on hover), days and times as UTC dates,
  // listening as hours and minutes. The checks above read the file's own values; this only shows them.
  const DAY_MS = 86400000;
  const COLUMN_LABELS = { title: "Title", work_id: "Work", role: "Role", node_id: "Node", day: "Day",
    listened_ms: "Listened", amount: "Amount", artifact: "Frozen chunk", parts: "Made of" };
  const COLUMN_ORDER = Object.keys(COLUMN_LABELS);
  const LINK_STATES = { passed: "checked", failed: "refused", "not made": "not checked" };

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

  function cellNode(column, value, asset, linked) {
    if (column === "amount") return moneyNode(value, asset);
    if (column === "artifact") {
      return Object.assign(document.createElement("span"), { textContent: "chunk " + value.chunk + " of " +
        utcDate(Number(value.day) * DAY_MS), title: "SHA-256 " + value.hash });
    }
    if (column === "parts") {
      return document.createTextNode(value.count + " listener-day" + (value.count === 1 ? "" : "s") +
        " (" + LINK_STATES[linked || "not made"] + ")");
    }
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

  // The recipient's display name when the statement has one, isolated so a right-to-left name cannot reorder the
  // ID beside it; then the ID, which is what the ledger pays.
  function recipientNodes(statement) {
    const id = statement.recipient_id + (statement.role ? " (" + statement.role + ")" : "");
    if (typeof statement.recipient_name !== "string") return [document.createTextNode(id)];
    return [Object.assign(document.createElement("bdi"), {textContent: statement.recipient_name}),
      document.createTextNode(" (" + id + ")")];
  }

  function showStatement(statement, verified, dayLines) {
    const section = document.getElementById("statement");
    section.hidden = !statement;
    if (!statement) return;
    const linked = new Map((dayLines || []).map((line) => [line.line_id, line.result]));
    const asset = statement.asset || "";
    text("statement-heading", verified ? "Your statement" : "The statement in this file (not verified)");
    document.getElementById("statement-recipient").replaceChildren(...recipientNodes(statement));
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
        if (line[column] !== undefined) cell.append(cellNode(column, line[column], asset, linked.get(line.line_id)));
        return cell;
      }));
      return row;
    }));
  }

  // What each checked day line is made of, and why each refused parts file was refused.
  function tableRow(nodes, tag) {
    const row = document.createElement("tr");
    row.replaceChildren(...nodes.map((node) => {
      const cell = document.createElement(tag);
      cell.append(node);
      return cell;
    }));
    return row;
  }

  function partsTable(partsDocument, asset) {
    const reference = PARTS.reference_by_role[partsDocument.day_line.role];
    const titles = ["Listener-day (its place in the chunk)", ...(reference ? [COLUMN_LABELS[reference]] : []), "Amount"];
    const table = document.createElement("table");
    table.className = "parts-lines";
    table.createTHead().append(tableRow(titles.map((title) => document.createTextNode(title)), "th"));
    const body = table.createTBody();
    for (const part of partsDocument.parts) {
      for (const line of part.lines) {
        body.append(tableRow([document.createTextNode("#" + part.position),
          ...(reference ? [document.createTextNode(line[reference])] : []), moneyNode(line.amount, asset)], "td"));
      }
    }
    return table;
  }

  function showParts(result, names) {
    const section = document.getElementById("parts");
    const asset = (result.statement && result.statement.asset) || "";
    const items = [];
    for (const outcome of result.parts_files) {
      const item = document.createElement("li");
      item.dataset.state = outcome.result === "passed" ? "passed" : "failed";
      item.dataset.reason = outcome.reason;
      item.textContent = names[outcome.file] + ": " + (outcome.result === "passed" ? "checked, " + outcome.detail + "."
        : "refused, " + inWords(outcome.reason) + " (" + outcome.reason + (outcome.field ? " at " + outcome.field : "") + ": " + outcome.detail + ").");
      const partsDocument = outcome.result === "passed" && result.documents.get(outcome.line_id);
      if (partsDocument) item.append(partsTable(partsDocument, asset));
      items.push(item);
    }
    document.getElementById("parts-files-checked").replaceChildren(...items);
    section.hidden = !items.length;
  }

  function clearVerdict(name) {
    const verdict = document.getElementById("verdict");
    verdict.dataset.state = "checking";
    verdict.dataset.reason = "";
    verdict.dataset.field = "";
    verdict.textContent = "Checking " + name + "…";
    FORMAT.checks.forEach((check) => setStep(check, "pending", ""));
    showStatement(null, false);
    document.getElementById("parts").hidden = true;
  }

  let latest = 0;
  const chosen = { statement: null, parts: [] };

  function bytesOf(file) {
    return file.arrayBuffer().then((buffer) => new Uint8Array(buffer));
  }

  async function check() {
    const mine = ++latest;  // files chosen later replace this verdict, whichever finishes first
    const file = chosen.statement;
    const names = chosen.parts.map((part) => part.name);
    text("file-name", file ? file.name + (names.length ? " with " + names.length + " parts file" + (names.length === 1 ? "" : "s") : "")
      : names.length + " parts file" + (names.length === 1 ? "" : "s") + ": now choose the statement file they belong to.");
    if (!file) return;
    clearVerdict(file.name);
    let result;
    try {
      result = await verifyStatementBytes(await bytesOf(file), await Promise.all(chosen.parts.map(bytesOf)));
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
    showStatement(result.statement, result.verdict === "verified", result.day_lines);
    showParts(result, names);
  }

  // A dropped file is a parts file when it says so; any other is the statement file.
  async function isPartsFile(file) {
    try {
      const value = JSON.parse(new TextDecoder().decode(await bytesOf(file)));
      return isObject(value) && value.version === PARTS.version;
    } catch (error) {
      return false;
    }
  }

  async function dropped(files) {
    const kinds = await Promise.all(files.map(isPartsFile));
    const statements = files.filter((_, index) => !kinds[index]);
    const parts = files.filter((_, index) => kinds[index]);
    if (statements.length) chosen.statement = statements[statements.length - 1];
    if (parts.length) chosen.parts = parts;
    check();
  }

  function start() {
    if (!window.crypto || !crypto.subtle) {
      text("verdict", "This page needs a secure connection (HTTPS) to use the browser's SHA-256 and Ed25519.");
      return;
    }
    const input = document.getElementById("statement-file");
    const partsInput = document.getElementById("parts-files");
    const zone = document.getElementById("drop-zone");
    input.addEventListener("change", () => {
      if (!input.files.length) return;
      chosen.statement = input.files[0];
      check();
    });
    partsInput.addEventListener("change", () => {
      chosen.parts = [...partsInput.files];
      check();
    });
    zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.dataset.over = "true"; });
    zone.addEventListener("dragleave", () => { delete zone.dataset.over; });
    zone.addEventListener("drop", (event) => {
      event.preventDefault();
      delete zone.dataset.over;
      if (event.dataTransfer.files.length) dropped([...event.dataTransfer.files]);
    });
    document.body.dataset.ready = "true";
  }

  window.PortoVerify = { verifyStatementBytes, verifyInclusion, canonical, leafHash, parseNote, readPartsFile };
  start();
})();
