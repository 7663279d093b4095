// replay-get.mjs: loads WARC (or ARC) files into one wabac.js collection
// the way ReplayWeb.page loads them (as replay.mjs does) and answers
// replay requests for the URLs named in a JSON file ([{url, ts}], ts in
// milliseconds) with ArchiveDB.getResource, the lookup its service worker
// runs for a raw ("id_") replay request. Prints one JSON document on
// stdout: per request the answer wabac.js gives (null when it has none):
// url, status, content-type and location headers, payload length and
// SHA-256, and the body as text for HTML and CSS.
// Usage: node replay-get.mjs QUERIES.json FILE...
import "fake-indexeddb/auto";
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { createHash } from "node:crypto";

globalThis.self = globalThis;
console.log = console.error;
const { WorkerLoader, ArchiveRequest } = await import("@webrecorder/wabac/swlib");

const ts17 = (ms) => new Date(ms).toISOString().replace(/[-:TZ.]/g, "");
const [queriesFile, ...files] = process.argv.slice(2);
const queries = JSON.parse(readFileSync(queriesFile, "utf8"));

const loader = new WorkerLoader({ addEventListener() {} });
await loader._init_db;
let coll = null;
for (const path of files) {
  const blob = new Blob([readFileSync(path)]);
  const file = { sourceUrl: "blob://local/" + basename(path), name: basename(path), blob, size: blob.size, newFullImport: true };
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
db.repeatTracker = null;

const answers = [];
for (const q of queries) {
  const req = new ArchiveRequest(q.url, new Request(q.url), { ts: ts17(q.ts), mod: "id_" });
  const resp = await db.getResource(req, "", null);
  if (!resp) {
    answers.push(null);
    continue;
  }
  const body = (await resp.getBuffer()) || new Uint8Array();
  const ctype = resp.headers.get("content-type") || "";
  const a = {
    url: resp.url,
    status: resp.status,
    contentType: ctype,
    location: resp.headers.get("location") || "",
    length: body.length,
    sha256: createHash("sha256").update(body).digest("hex"),
  };
  if (/html|css/.test(ctype)) a.text = new TextDecoder().decode(body);
  answers.push(a);
}
process.stdout.write(JSON.stringify({ wabac: "2.27.3", answers }) + "\n");
