// check.mjs: reads WARC files with warcio.js (npm "warcio") and prints, for
// every record, what warcio.js itself makes of it, as one JSON document on
// stdout: offsets and stored lengths as warcio.js's parser reports them,
// the WARC headers the Go test compares, and SHA-1 and SHA-256 digests
// computed by streaming the bytes warcio.js hands out:
//   block   = the record block (parsed without HTTP);
//   payload = the HTTP entity as warcio.js de-chunks it (its own
//             AsyncIterReader with dechunk on and no content decoding),
//             or the whole block for records without an HTTP message;
//   raw     = the bytes after the HTTP head, chunk framing kept.
// Usage: node check.mjs FILE...
import { createReadStream } from "node:fs";
import { createHash } from "node:crypto";
import { WARCParser, AsyncIterReader } from "warcio";

const HEADERS = [
  "WARC-Type", "WARC-Target-URI", "WARC-Date", "WARC-Record-ID",
  "WARC-Payload-Digest", "WARC-Block-Digest", "WARC-Refers-To",
  "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Profile",
  "WARC-Truncated", "Content-Type", "Content-Length",
];

// digests streams iter through SHA-1 and SHA-256: [{sha1, sha256} in hex, length].
async function digests(iter) {
  const h1 = createHash("sha1");
  const h256 = createHash("sha256");
  let n = 0;
  for await (const chunk of iter) {
    h1.update(chunk);
    h256.update(chunk);
    n += chunk.length;
  }
  return [{ sha1: h1.digest("hex"), sha256: h256.digest("hex") }, n];
}

// blocks parses without HTTP: warcio.js's offsets, lengths and block digests.
async function blocks(path) {
  const out = [];
  const parser = new WARCParser(createReadStream(path), { parseHttp: false });
  for await (const record of parser) {
    const [block, blockLen] = await digests(record.reader);
    const headers = {};
    for (const name of HEADERS) {
      const v = record.warcHeaders.headers.get(name);
      if (v !== null && v !== undefined) headers[name] = v;
    }
    out.push({ offset: parser.offset, length: parser.recordLength, headers, block, blockLen });
  }
  return out;
}

// payloads parses with HTTP: status and payload digests, in record order.
async function payloads(path) {
  const out = [];
  const parser = new WARCParser(createReadStream(path), { parseHttp: true });
  for await (const record of parser) {
    const http = record.httpHeaders;
    const r = { offset: parser.offset, http: !!http };
    if (http) {
      r.status = http.statusCode ? Number(http.statusCode) : 0;
      const te = (http.headers.get("Transfer-Encoding") || "").toLowerCase();
      r.chunked = te.split(",").map((s) => s.trim()).includes("chunked");
    }
    if (r.chunked) {
      // Read the raw bytes once, then de-chunk them with warcio.js's reader.
      const raw = await AsyncIterReader.readFully(record.reader);
      [r.raw, r.rawLen] = await digests([raw]);
      [r.payload, r.payloadLen] = await digests(new AsyncIterReader([raw], null, true));
    } else {
      [r.payload, r.payloadLen] = await digests(record.reader);
      r.raw = r.payload;
      r.rawLen = r.payloadLen;
    }
    out.push(r);
  }
  return out;
}

const files = [];
for (const path of process.argv.slice(2)) {
  const f = { path };
  try {
    const bs = await blocks(path);
    const ps = await payloads(path);
    if (bs.length !== ps.length) {
      throw new Error(`${bs.length} records without HTTP parsing, ${ps.length} with`);
    }
    f.records = bs.map((b, i) => ({ ...b, ...ps[i], offset: b.offset }));
  } catch (e) {
    f.error = String(e && e.stack ? e.stack : e);
  }
  files.push(f);
}
process.stdout.write(JSON.stringify({ warcio: "2.4.11", files }) + "\n");
