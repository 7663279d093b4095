// replay-wacz.mjs: loads one WACZ the way ReplayWeb.page opens a local
// file (WorkerLoader.addCollection of a ".wacz" source that can be read by
// range: a MultiWACZ reading its index and records on demand), or WARC
// files fully imported as replay.mjs does, and answers replay requests
// with ArchiveDB.getResource as wabac.js's service worker does.
// Usage: node replay-wacz.mjs QUERIES.json FILE...
//   QUERIES.json: [{"url": ..., "ts": <ms>}]
// Prints one JSON document: {pages: [...], verify: {...}, answers: [...]}
//   pages:   the pages wabac.js read from the WACZ (url, ts, title)
//   verify:  wabac.js's verification summary (signature, hashes) of a WACZ
//   answers: per query the response (url, status, length, sha256 of the
//            payload as served) or null
import "fake-indexeddb/auto";
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { createHash } from "node:crypto";

globalThis.self = globalThis;
console.log = console.error;
const { WorkerLoader, ArchiveRequest } = await import("@webrecorder/wabac/swlib");

const hex = (alg, b) => createHash(alg).update(b).digest("hex");
const ts17 = (ms) => new Date(ms).toISOString().replace(/[-:TZ.]/g, "");

const [queriesPath, ...files] = process.argv.slice(2);
const queries = JSON.parse(readFileSync(queriesPath, "utf8"));
const loader = new WorkerLoader({ addEventListener() {} });
await loader._init_db;
let coll = null;
for (const path of files) {
  const blob = new Blob([readFileSync(path)]);
  const isWACZ = path.endsWith(".wacz");
  const file = { sourceUrl: "blob://local/" + basename(path), name: basename(path), blob, size: blob.size };
  if (!isWACZ) file.newFullImport = true;
  if (coll) file.importCollId = coll.name;
  let failure = "";
  const res = await loader.addCollection({ name: "interop-" + basename(path), file }, (_p, err) => {
    if (err) failure = String(err);
  });
  if (!res) throw new Error(`wabac.js could not load ${path}: ${failure}`);
  coll = coll || res;
}
const db = coll.store;
db.repeatTracker = null;

async function replay(url, ts) {
  const req = new ArchiveRequest(url, new Request(url), { ts: ts17(ts), mod: "id_" });
  const resp = await db.getResource(req, "", null, { noRedirect: true });
  if (!resp || resp.status === undefined) return null;
  const body = (await resp.getBuffer()) || new Uint8Array();
  return { url: resp.url, status: resp.status, length: body.length, sha256: hex("sha256", body) };
}

const answers = [];
for (const q of queries) answers.push({ query: q, answer: await replay(q.url, q.ts) });
const pages = (await db.getAllPages()).map(({ url, ts, title }) => ({ url, ts, title }));
const verify = files[0].endsWith(".wacz") ? { summary: await db.getVerifyInfo(), entries: await db.db.getAll("verification") } : null;
process.stdout.write(JSON.stringify({ wabac: "2.27.3", pages, verify, answers }) + "\n");
