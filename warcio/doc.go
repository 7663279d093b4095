// Package warcio reads WARC and ARC files leniently and fast, parses the
// HTTP messages recorded in them, and holds the one WARC record encoder
// (Draft, a record before serialisation, over RecordHead; with the WARC
// versions, revisit profiles and the warcinfo record) every writer of
// Wayside uses (package warcfile writes the files), the one writer of a
// record as a gzip member (MemberWriter), and the strict reader of what
// Wayside itself wrote (ScanMembers, ReadMember: one record per member,
// exact length, verified block digest), which crash recovery and the
// re-reading of originals rely on where Reader would forgive.
//
// ARC files (v1 and v2, plain or one gzip member per record, told from WARC
// by their content) are read behind the same API: see Record for how an ARC
// record is presented. Their leniency: URLs with spaces (fields are split
// from the right), Archive-dates of other than 14 digits, missing line
// feeds between records, and wrong Archive-lengths. An Archive-length is
// checked against the data that follows the header line (read ahead in the
// buffer): one that runs over the next record's header line, or stops
// short of it, is replaced by the length up to that line; one that runs
// past the end of the data by the length up to it — the gzip member's end,
// or at the end of the file a record kept when it is whole (a few bytes
// short, or an HTTP message whose body is complete) and marked
// Record.Truncated. Records larger than the buffer are corrected from the
// file's structure (seeking back, as Open allows). Corrections are noted
// in Anomalies. A header line that does not parse (too few fields, no
// date) is ErrCorrupt; reading goes on at the next record.
//
// It owns the one implementation of two things the rest of Wayside relies
// on: locating records (offset and stored length, i.e. the gzip member, as
// CDX indexes need them) and computing payload digests the way the WARC
// specification defines them — over the HTTP entity body after removing the
// transfer encoding (chunking) and keeping any content encoding.
//
// Reading is lenient because WARCs in the wild are messy: LF-only line
// endings, odd header case, WARC/0.17 to WARC/1.1, uncompressed files,
// Content-Length values off by a CRLF, records spanning gzip members and
// recompressed files are all read. Anything the reader had to forgive is
// listed in Record.Anomalies. What cannot be read is reported as an *Error
// naming the file and offset; a partial record at the end of a file (a
// crashed crawler's ".open" file, a cut download) is reported with
// ErrTruncated, distinct from the io.EOF of a clean end, and a corrupt record
// in the middle with ErrCorrupt, after which Next resynchronises: inside a
// sound gzip member on its next line that starts a record (a member may
// hold many records, or the whole file: none after a damaged one is lost),
// else on the next gzip member or "WARC/" line. A WARC Content-Length that
// runs over the next record's header (seen in the buffer) is cut back to
// it, the record marked Truncated.
//
// Every input byte is accounted for: it lies in a record or in a Span the
// reader reports (Options.OnSpan, Reader.Unaccounted) — a damaged record,
// bytes between records that start none, a partial record at the end, zero
// padding — apart from the blank lines between records. Spans are located
// in the stored file and, inside gzip members, in the uncompressed data
// (Record.DataOffset and DataLength locate records there too, which tells
// apart the records of a member that holds several). Every span but zero
// padding also surfaces as an *Error from Next, so a command that lists
// Next's errors names every unaccounted stretch by file and offset.
// Package internal/framescan frames files a second, separately written
// way, against which tests and verification commands check this reader.
//
// Every WARC file Wayside writes holds one gzip member per record, and
// MemberWriter is the one place that compresses them: WriteRecord writes a
// RecordHead, its block and RecordEnd as one member, WriteMember an
// already serialised record, and both return the member's stored length
// (the length CDX lines carry). Its output is byte for byte that of a
// gzip.Writer at the same level (klauspost/compress, 1–9, default 6)
// compressing the record in one go; it keeps its compressor between
// records, and a MemberPool shares writers of one level among goroutines
// (the crawler's writer). The crawler, ARC conversion, post-crawl dedup's
// revisits and characterization metadata write with it.
//
// Open with Options.Map reads a complete .warc.gz file mapped into memory
// (package internal/mapfile): gzip members are read from the mapping (by
// the fast path below through a window copied out of it), without a
// read(2) per buffer; the reader
// behaves exactly as it does buffered, and a file truncated underneath it
// gives an *Error rather than a crash.
//
// Inflation: each gzip member, once the gzip reader (klauspost/compress)
// has parsed its header (for a mapped file, before: a member libdeflate
// inflates and verifies whole has a sound header, unless it declares a
// header CRC-16, which only the gzip reader checks), is inflated whole by
// libdeflate (package internal/libdeflate, cgo) when its stored bytes are
// at hand and it inflates to at most 4 MiB; its bytes are then served from
// that buffer exactly as the gzip reader would serve them (a payload the
// data buffer has not taken yet is digested straight from it). libdeflate is handed the
// stored bytes at hand from the member's first and finds the member's end
// itself (nothing scans for it): for a mapped file, a read-ahead window of
// 2 to 5 MiB copied out of the mapping under the fault guard (libdeflate
// never reads a mapping, so a file truncated under it still gives an
// *Error, not a crash in C), filled again from a member's first byte when
// the member runs past its end; for a buffered input, the reader's buffer
// (filled once more for a member that runs past its end, when the input
// is a file). Every other member (damaged, cut, larger; every member of a
// build without cgo) is read by the gzip reader, so what the reader
// returns does not depend on which inflater ran (fastinflate.go; tests
// compare the two).
package warcio
