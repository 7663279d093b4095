// Package interop proves with third-party tools that the WARC and CDXJ
// files Wayside writes are usable as written. It holds only tests; they run
// the real wayside binary (built once per run) as a user would, then read
// its output with tools Wayside did not write:
//
//   - warcio.js 2.4.11 (npm "warcio", Webrecorder's WARC library) reads
//     every record of every output file (js/check.mjs): the record count,
//     offsets, stored lengths, types, target URIs and record IDs must equal
//     those of Wayside's reader; the block digest and the payload digest
//     (the HTTP entity de-chunked by warcio.js's own reader, content
//     encoding kept) computed over the bytes warcio.js hands out must equal
//     the declared WARC-Block-Digest and WARC-Payload-Digest of every
//     record Wayside wrote, and Wayside's capture must carry that digest.
//     Records `wayside dedup run` copies from its inputs must read exactly
//     as the input records do.
//   - The warcio CLI's own indexer (`warcio cdx-index`, CDXJ) indexes the
//     same files; its lines must agree with `wayside cdxj`'s on urlkey,
//     timestamp, url, mime, status, digest, length, offset and filename,
//     except for the documented convention differences below, which are
//     accepted and logged with a count.
//   - wabac.js 2.27.3 (npm "@webrecorder/wabac", the replay engine of
//     ReplayWeb.page) loads each output set into one collection the way
//     ReplayWeb.page does (WorkerLoader.addCollection → WARCLoader →
//     ArchiveDB) and replays every revisit Wayside wrote with
//     ArchiveDB.getResource (js/replay.mjs): its lookup of the revisit's
//     WARC-Refers-To-Target-URI and -Date must find the original record at
//     that exact date, and replaying the revisit must serve exactly what
//     replaying the original serves (status, URL, payload bytes). Node has
//     no IndexedDB: fake-indexeddb 6.2.8, a complete in-memory
//     implementation of the W3C IndexedDB API, stands in for the browser's
//     (storage only; the lookup logic is wabac.js's). Independently of any
//     replay tool, every revisit's Refers-To-Target-URI + Refers-To-Date +
//     Payload-Digest must name a response or resource record of the set
//     whose payload warcio.js finds to have that digest, and its
//     WARC-Refers-To must be that record's ID.
//   - Every CDXJ file Wayside leaves on disk (`wayside cdxj` output, the
//     CDXJ beside a crawl's WARC files, the CDXJ `dedup run` writes, the
//     sidecar's CDXJ of the WARCs it ingested) must be in byte order and
//     searchable by pywb's binary search (cdxjtest.CheckSorted: a
//     step-for-step port of pywb.utils.binsearch.iter_range must return,
//     for every urlkey, exactly that key's lines, the range pywb's
//     exact-URL query reads). CDXJ files beside WARC files must hold
//     exactly the lines `wayside cdxj` gives for those files.
//
// WACZ (package wacz, `wayside wacz create`): a crawl of the example
// site (twice, revisits of both profiles across rotated files) is packaged
// with a plain CDXJ and with a ZipNum index and loaded in wabac.js as
// ReplayWeb.page opens a local WACZ — on demand, index first, records by
// byte range through the zip (js/replay-wacz.mjs): every page of
// pages.jsonl and every revisit must replay byte for byte as wabac.js
// replays the WARC files imported directly, and wabac.js must find the
// signature valid with Wayside's key (TestWACZReplay). js/check-wacz.mjs,
// an independent checker with its own zip reader, checks the layout,
// every resource's size and sha256, the digest, the signature (WebCrypto),
// the index against the records and the pages against the index. js-wacz
// 0.1.6 (npm "@harvard-lil/js-wacz") packages the same WARC files:
// same WARC bytes, the same index lines modulo the warcio.js conventions
// above and the status Wayside leaves out of server-not-modified revisits,
// js-wacz's pages among Wayside's with their titles; js-wacz 0.1.6 lists
// wrong sha256 values for the WARC resources in its datapackage.json, so
// its hashes are not compared, and `wayside wacz verify` of its file must
// report those and nothing else (TestWACZAgainstJSWACZ). ReplayWeb.page
// itself (npm "replaywebpage" 2.5.3: its ui.js and sw.js, served with the
// WACZ from a loopback HTTP server) loads the same kind of WACZ in
// headless Chromium, its service worker reading the WACZ by range
// requests; every page and revisit, fetched through the service worker
// (id_), must be the bytes the example site served, and the embed must
// show the page it was given with its title (TestWACZReplayWebPage).
//
// Migration (`wayside migrate`): the pragmatic workflow's copy of a crawl
// whose page shows a BMP and a TIFF and a stylesheet naming the BMP is
// replayed by wabac.js under node (TestMigrateReplay: the page and
// stylesheet name the new .png files, which replay as the migrated
// bytes, the old URLs as 301s to them) and opened, as a .warc.gz loaded by
// URL, in ReplayWeb.page itself in headless Chromium with the same
// harness as the WACZ (rwpSession): in the replayed page every <img>'s
// currentSrc is the new .png URL at the original image's size, and the
// CSS background is the new PNG, fetched with status 200
// (TestMigrateReplayWebPage). wabac.js 2.x lists no pages for a plain
// WARC, so there the harness waits for its pages API to answer, not for
// pages.
//
// The output sets: a crawl of the example site (crawl/sitetest) run twice,
// the second time with conditional requests, rotated into several WARC
// files so that revisits refer across files (16 revisits of both
// profiles); `convert arc2warc` of every ARC in ../shared/corpus/arc;
// `dedup run` of a 5 MB warcgen WARC (37 revisits) and of the whole WARC
// corpus; the two evidence WARCs of `fixity replay --evidence` of a
// memento of fixity/testarchive in Chromium; the CDXJ `wayside serve`
// keeps for the WARC corpus it ingests. TestChecksCatchBrokenOutput
// shows the checks fail on a wrong block digest, a wrong payload digest, a
// revisit naming a date no record has, an unsorted CDXJ file and a CDXJ
// line differing from warcio.js's.
//
// Documented differences between Wayside's CDXJ (pywb's conventions) and
// warcio.js's, accepted:
//   - urlkey of non-HTTP URIs (dns:, metadata://, urn:): warcio.js leaves
//     them as they are; pywb's surt canonicalises them.
//   - urlkey canonicalisation: warcio.js's getSurt lower-cases, drops www,
//     reverses the host and sorts the query; IA canonicalisation (pywb,
//     package surt) also decodes percent-escapes that need none
//     (repeatedly), sorts the query after decoding, collapses repeated
//     slashes and strips a trailing slash from the path.
//   - mime "unk" (pywb) where an HTTP message has no Content-Type; warcio.js
//     writes none.
//   - digest of a record without WARC-Payload-Digest: warcio.js writes
//     none, pywb and Wayside compute it (checked against warcio.js's
//     bytes).
//
// One difference is not accepted, because Wayside's line then differs from
// the one pywb writes: for records of uncompressed WARC files, Wayside's
// CDXJ length counts the CRLF CRLF that ends the record, while warcio.js
// and pywb's Python warcio (ArchiveIterator.read_to_end) do not.
//
// The tools are pinned in js/package-lock.json and installed by
// scripts/interop-js.sh (npm ci into a cache directory named after the
// lock file's hash; WAYSIDE_INTEROP_JS overrides it), which
// scripts/test.sh runs. Without node or the packages the tests skip, and
// fail under WAYSIDE_REQUIRE_TOOLS.
package interop
