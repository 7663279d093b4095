// Package framescan finds the records of a WARC or ARC file a second way,
// written apart from package warcio's reader so that a check built on it
// does not trust that reader: it finds and inflates every gzip member on
// its own (its own member walk and resynchronisation after damage, none of
// the reader's framing code), looks at the
// start of every line of the uncompressed data for a WARC header block
// ("WARC/1.0" … WARC-Type … blank line) or an ARC header line (a URL,
// fields, a date of digits, a length), and keeps a record header found
// inside another record only when that record's declared length is not
// confirmed by what lies at its end (another header, a member's end, the
// data's end). Payloads that embed a web archive are thus not mistaken for
// records, and a record whose declared length is wrong does not hide the
// next one.
//
// The inflater is klauspost/compress's, a well-kept third-party library
// (pinned in go.mod) that warcio's reader also uses: what this check must
// not share with the reader is Wayside's framing logic — where members
// start and end, where records start, what a damaged stretch is — not a
// decompressor that others maintain and test. It was chosen by measure:
// inflating straight from the mapped file (File maps it read-only, the
// inflater reads a *bytes.Reader, for which the library has a decoding
// loop with no interface call per byte) took 0.83 CPU-s for a 201 MB
// (raw) WARC where the standard library's inflater took 1.05 over the same
// mapping and 1.15 over a bufio.Reader. Pages behind the scan are
// released as it moves on (mapfile.Release), so the resident size stays
// bounded whatever the file's size.
//
// convert verify and dedup validate compare the records warcio reads, and
// the records an output holds, with the records found here.
package framescan
