// Package wacz writes, verifies and safely opens WACZ files (Web Archive
// Collection Zipped, WACZ 1.1.1, https://specs.webrecorder.net/wacz/1.1.1/)
// and signs them as the WACZ Signing and Verification specification
// describes.
//
// Create streams its inputs: each WARC file is read once to index it, find
// its pages and hash it (SHA-256 for datapackage.json, CRC-32 for the zip),
// then copied byte for byte into archive/ with the zip Store method, so a
// reader can fetch any record by a byte range of the WACZ. The index lines
// (package cdxj, pywb's conventions) go through cdxj.Sorter, which spills
// sorted runs to disk, and pages are written to temporary files as they are
// found, so memory stays flat as the input grows. Every generated member is
// staged in a temporary file and hashed while written; the output is a
// temporary file renamed into place once complete. CreateTo writes the
// same zip to any io.Writer as it builds it, from Inputs that are read
// twice (to hash, then to copy): the daemon's GET /<coll>/wacz streams a
// selection of records read by range from its WARC files that way.
//
// Layout written:
//
//	archive/NAME.warc.gz           the input WARC files, stored (not deflated)
//	indexes/index.cdxj             sorted CDXJ, or past Options.ZipNumThreshold
//	indexes/index.cdx.gz           a ZipNum index: gzip blocks of ZipNumLines
//	indexes/index.idx                lines, and one line per block naming its
//	                                 first key, offset, length and SHA-256
//	pages/pages.jsonl              seeds and in-scope HTML pages (title, ts)
//	pages/extraPages.jsonl         other HTML pages (only when there are some)
//	wayside/...                    Wayside-only extras (MementoMap, format
//	                                 identification, fixity manifest), listed
//	                                 as resources that other readers ignore
//	datapackage.json               every resource's path, size and sha256
//	datapackage-digest.json        the sha256 of datapackage.json, signed
//
// The index follows pywb's conventions (package cdxj) with one exception:
// a revisit whose HTTP status is 304 (the server-not-modified profile)
// gets no status field. wabac.js, which ReplayWeb.page runs, treats a
// revisit line with a 3xx status as the revisit of a redirect and serves
// it as recorded — an empty 304 — instead of the original's payload;
// without the status it resolves the revisit to its original
// (internal/interop's TestWACZReplay shows both). Pages' timestamps are
// given to the second, the precision of the index's timestamps.
//
// Signing uses an anonymous ECDSA key (LoadOrCreateKey keeps one under the
// user's configuration directory). The curve is P-384, not P-256: wabac.js
// (ReplayWeb.page) imports an anonymous "publicKey" as P-384 and
// ArchiveWeb.page signs with P-384, so a P-256 signature would not verify
// there. The signature is ECDSA with SHA-256 over the UTF-8 text of the
// "hash" field, encoded as WebCrypto encodes it (r||s), base64.
//
// Verify checks a WACZ as a whole: the zip is complete and safe (member
// names, counts, sizes, compression ratios: see Limits) and its local
// headers agree with its central directory, every resource's
// size and sha256, datapackage-digest.json against datapackage.json, the
// signature, every index line against the record it points at (URL, date,
// payload digest, block digest) and every page against the index. Each
// problem names the member it is in.
//
// Open and ExtractWARCs read a WACZ as an input: the archive/ members are
// read through the zip (stored members by byte range), or copied into a
// work directory under the same limits, never outside it. Commands and
// the daemon's watched directories read them in place: warcio.Open reads
// "FILE.wacz#archive/NAME" by range, and index locations name such a
// member "FILE.wacz#NAME" (warcio.MemberName, resolved by
// warcfile.Locations).
package wacz
