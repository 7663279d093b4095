// replay.mjs: loads WARC files into one wabac.js collection, the way
// ReplayWeb.page loads them (WorkerLoader.addCollection: WARCLoader into an
// ArchiveDB), and replays every revisit record wabac.js indexed with
// ArchiveDB.getResource, the lookup its service worker runs for a replay
// request. Node has no IndexedDB: fake-indexeddb (a complete in-memory
// implementation of the W3C API) stands in for the browser's.
// Prints one JSON document on stdout:
//   resources: every entry wabac.js indexed (url, ts in ms, status, digest,
//              origURL/origTS for revisits);
//   revisits:  per revisit entry, what lookupUrl(origURL, origTS) found (the
//              original wabac.js resolves it to) and what getResource
//              answers for the revisit's own URL and millisecond timestamp
//              and for the original's (status, payload length, SHA-1 and
//              SHA-256 of the payload as served: wabac.js decodes
//              Content-Encoding, so these are not the WARC payload digests).
// Usage: node replay.mjs FILE...
import "fake-indexeddb/auto";
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { createHash } from "node:crypto";

globalThis.self = globalThis;
// wabac.js logs progress with console.log: keep stdout for the result.
console.log = console.error;
const { WorkerLoader, ArchiveRequest } = await import("@webrecorder/wabac/swlib");

const hex = (alg, b) => createHash(alg).update(b).digest("hex");
const ts17 = (ms) => new Date(ms).toISOString().replace(/[-:TZ.]/g, "");

const loader = new WorkerLoader({ addEventListener() {} });
await loader._init_db;
let coll = null;
for (const path of process.argv.slice(2)) {
  const blob = new Blob([readFileSync(path)]);
  const file = {
    sourceUrl: "blob://local/" + basename(path),
    name: basename(path),
    blob,
    size: blob.size,
    newFullImport: true,
  };
  if (coll) file.importCollId = coll.name;
  let failure = "";
  const res = await loader.addCollection({ name: "interop", file }, (_p, err) => {
    if (err) failure = String(err);
  });
  if (!res) throw new Error(`wabac.js could not load ${path}: ${failure}`);
  coll = coll || res;
}
if (!coll) throw new Error("no files");
const db = coll.store;
db.repeatTracker = null; // no browser page repeats requests here

// replay asks wabac.js for url at ts (ms) as a raw ("id_") replay request
// does, and summarises the answer.
async function replay(url, ts) {
  const req = new ArchiveRequest(url, new Request(url), { ts: ts17(ts), mod: "id_" });
  const resp = await db.getResource(req, "", null);
  if (!resp) return null;
  const body = (await resp.getBuffer()) || new Uint8Array();
  return {
    url: resp.url,
    status: resp.status,
    length: body.length,
    sha1: hex("sha1", body),
    sha256: hex("sha256", body),
  };
}

const resources = await db.db.getAll("resources");
const revisits = [];
for (const r of resources.filter((r) => r.origURL)) {
  const orig = await db.lookupUrl(r.origURL, r.origTS);
  const out = { url: r.url, ts: r.ts, origURL: r.origURL, origTS: r.origTS, digest: r.digest };
  if (orig) {
    out.original = { url: orig.url, ts: orig.ts, status: orig.status, digest: orig.digest, revisit: !!orig.origURL };
  }
  out.replay = await replay(r.url, r.ts);
  out.originalReplay = await replay(r.origURL, r.origTS);
  revisits.push(out);
}
process.stdout.write(JSON.stringify({
  wabac: "2.27.3",
  resources: resources.map(({ url, ts, status, digest, origURL, origTS }) => ({ url, ts, status, digest, origURL, origTS })),
  revisits,
}) + "\n");
