// Package framescan finds the records of a WARC or ARC file a second way,
// written apart from package warcio's reader so that a check built on it
// does not trust that reader: it inflates every gzip member on its own
// (the standard library's decompressor, not the reader's), looks at the
// start of every line of the uncompressed data for a WARC header block
// ("WARC/1.0" … WARC-Type … blank line) or an ARC header line (a URL,
// fields, a date of digits, a length), and keeps a record header found
// inside another record only when that record's declared length is not
// confirmed by what lies at its end (another header, a member's end, the
// data's end). Payloads that embed a web archive are thus not mistaken for
// records, and a record whose declared length is wrong does not hide the
// next one.
//
// convert verify and dedup validate compare the records warcio reads, and
// the records an output holds, with the records found here.
package framescan
