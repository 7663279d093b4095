// check-wacz.mjs: an independent check of a WACZ's layout and hashes,
// written apart from Wayside's writer and verifier: its own zip reader
// (end of central directory, central directory, local headers), Node's
// zlib and WebCrypto. Checks: every member stored (method 0) with its
// sizes in the local header and the same name there; datapackage.json's
// profile and version, and the size and sha256 of every resource; no
// member unlisted; datapackage-digest.json's hash; the signature (ECDSA
// P-384 / SHA-256 over the hash text, as wabac.js verifies it); the index
// (CDXJ, or ZipNum blocks with their sha256) sorted, each line's record
// found at its offset and length with that WARC-Target-URI and WARC-Date;
// every page in the index.
// Usage: node check-wacz.mjs FILE.wacz   Prints one JSON document.
import { readFileSync } from "node:fs";
import { createHash, webcrypto } from "node:crypto";
import { gunzipSync } from "node:zlib";

const buf = readFileSync(process.argv[2]);
const problems = [];
const bad = (where, msg) => problems.push(`${where}: ${msg}`);
const sha256 = (b) => "sha256:" + createHash("sha256").update(b).digest("hex");

// End of central directory: the last signature 0x06054b50.
let eocd = -1;
for (let i = buf.length - 22; i >= Math.max(0, buf.length - 65557); i--) {
  if (buf.readUInt32LE(i) === 0x06054b50) { eocd = i; break; }
}
if (eocd < 0) throw new Error("no end of central directory");
const count = buf.readUInt16LE(eocd + 10);
let p = buf.readUInt32LE(eocd + 16);
const members = new Map();
for (let i = 0; i < count; i++) {
  if (buf.readUInt32LE(p) !== 0x02014b50) throw new Error("bad central directory entry " + i);
  const method = buf.readUInt16LE(p + 10);
  const csize = buf.readUInt32LE(p + 20);
  const usize = buf.readUInt32LE(p + 24);
  const nlen = buf.readUInt16LE(p + 28), elen = buf.readUInt16LE(p + 30), clen = buf.readUInt16LE(p + 32);
  const local = buf.readUInt32LE(p + 42);
  const name = buf.toString("utf8", p + 46, p + 46 + nlen);
  p += 46 + nlen + elen + clen;
  if (buf.readUInt32LE(local) !== 0x04034b50) { bad(name, "no local header"); continue; }
  const lflags = buf.readUInt16LE(local + 6);
  const lcsize = buf.readUInt32LE(local + 18);
  const lnlen = buf.readUInt16LE(local + 26), lelen = buf.readUInt16LE(local + 28);
  const lname = buf.toString("utf8", local + 30, local + 30 + lnlen);
  if (lname !== name) bad(name, `local header names ${lname}`);
  if (method !== 0) bad(name, `method ${method}, not stored`);
  if (csize !== usize) bad(name, "sizes differ");
  if (lflags & 8 || lcsize !== csize) bad(name, "sizes not in the local header");
  const start = local + 30 + lnlen + lelen;
  members.set(name, buf.subarray(start, start + csize));
}

const dpRaw = members.get("datapackage.json");
const dp = JSON.parse(dpRaw.toString("utf8"));
if (dp.profile !== "data-package") bad("datapackage.json", "profile " + dp.profile);
if (dp.wacz_version !== "1.1.1") bad("datapackage.json", "wacz_version " + dp.wacz_version);
const listed = new Set(["datapackage.json", "datapackage-digest.json"]);
for (const r of dp.resources) {
  listed.add(r.path);
  const b = members.get(r.path);
  if (!b) { bad(r.path, "listed but missing"); continue; }
  if (sha256(b) !== r.hash) bad(r.path, `sha256 ${sha256(b)}, listed ${r.hash}`);
  if (b.length !== r.bytes) bad(r.path, `bytes ${b.length}, listed ${r.bytes}`);
}
for (const name of members.keys()) if (!listed.has(name)) bad(name, "not listed");

const dg = JSON.parse(members.get("datapackage-digest.json").toString("utf8"));
if (dg.hash !== sha256(dpRaw)) bad("datapackage-digest.json", "hash does not match datapackage.json");
let signature = false;
if (dg.signedData) {
  const sd = dg.signedData;
  const key = await webcrypto.subtle.importKey("spki", Buffer.from(sd.publicKey, "base64"), { name: "ECDSA", namedCurve: "P-384" }, true, ["verify"]);
  signature = sd.hash === dg.hash && await webcrypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key, Buffer.from(sd.signature, "base64"), new TextEncoder().encode(sd.hash));
}

// Index lines.
let lines = [];
if (members.has("indexes/index.cdxj")) {
  lines = members.get("indexes/index.cdxj").toString("utf8").split("\n").filter((l) => l);
} else {
  const idx = members.get("indexes/index.idx").toString("utf8").split("\n").filter((l) => l && !l.startsWith("!meta"));
  const gz = members.get("indexes/index.cdx.gz");
  for (const l of idx) {
    const j = JSON.parse(l.slice(l.indexOf(" {") + 1));
    const block = gz.subarray(j.offset, j.offset + j.length);
    if (sha256(block) !== j.digest) bad("indexes/index.cdx.gz", `block at ${j.offset}: sha256 differs from index.idx`);
    const text = gunzipSync(block).toString("utf8");
    if (!text.startsWith(l.slice(0, l.indexOf(" {")))) bad("indexes/index.idx", "block prefix differs");
    lines.push(...text.split("\n").filter((x) => x));
  }
}
const captures = new Set();
for (let i = 0; i < lines.length; i++) {
  if (i > 0 && Buffer.compare(Buffer.from(lines[i - 1]), Buffer.from(lines[i])) > 0) bad("index", `line ${i + 1} out of order`);
  const sp = lines[i].indexOf(" {");
  const [, ts] = lines[i].slice(0, sp).split(" ");
  const j = JSON.parse(lines[i].slice(sp + 1));
  const warc = members.get("archive/" + j.filename);
  if (!warc) { bad("index", `line ${i + 1}: no archive/${j.filename}`); continue; }
  let rec = warc.subarray(Number(j.offset), Number(j.offset) + Number(j.length));
  if (j.filename.endsWith(".gz")) {
    try {
      rec = gunzipSync(rec);
    } catch (e) {
      bad("archive/" + j.filename, `offset ${j.offset}: the record does not inflate: ${e.message}`);
      continue;
    }
  }
  const head = rec.subarray(0, Math.min(rec.length, 8192)).toString("latin1");
  const h = (n) => (head.match(new RegExp("^" + n + ":\\s*(.*?)\\r?$", "mi")) || [])[1];
  const date = (h("WARC-Date") || "").replace(/[-:TZ]/g, "").slice(0, 14);
  if (!head.startsWith("WARC/")) bad("archive/" + j.filename, `offset ${j.offset}: no WARC record`);
  else if (h("WARC-Target-URI") !== j.url) bad("archive/" + j.filename, `offset ${j.offset}: WARC-Target-URI ${h("WARC-Target-URI")}, index says ${j.url}`);
  else if (date !== ts) bad("archive/" + j.filename, `offset ${j.offset}: WARC-Date ${date}, index says ${ts}`);
  captures.add(j.url + " " + ts);
}

let pages = 0;
for (const name of ["pages/pages.jsonl", "pages/extraPages.jsonl"]) {
  if (!members.has(name)) continue;
  const pl = members.get(name).toString("utf8").split("\n").filter((l) => l);
  if (!JSON.parse(pl[0]).format) bad(name, "no header line");
  for (const l of pl.slice(1)) {
    const pg = JSON.parse(l);
    pages++;
    const ts = new Date(pg.ts).toISOString().replace(/[-:TZ]/g, "").slice(0, 14);
    if (!captures.has(pg.url + " " + ts)) bad(name, `page ${pg.url} at ${ts} not in the index`);
  }
}
process.stdout.write(JSON.stringify({ members: members.size, resources: dp.resources.length, lines: lines.length, pages, signature, problems }) + "\n");
