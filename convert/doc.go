// Package convert turns ARC files into WARC files and proves that no payload
// changed on the way.
//
// ARCToWARC follows the IIPC WARC Implementation Guidelines (section 4.1,
// "ARC to WARC conversion"): one WARC file per ARC file (recommendation 12),
// named after it (NAME.arc[.gz] → NAME.warc.gz); every converted record keeps
// the ARC record's date as its WARC-Date (recommendation 13); the file's
// warcinfo record describes the conversion (software, date, the source ARC
// file's name, size and SHA-1, its version line and every field of its
// filedesc XML metadata as "arc-NAME") and the ARC filedesc itself is kept
// verbatim in a metadata record concurrent to the warcinfo record
// (recommendation 14), under its filedesc:// URL and date.
//
// Each other ARC record becomes one WARC record: a "response" record
// (Content-Type application/http;msgtype=response) when it holds an HTTP
// response under an http(s) URL, a "resource" record with the ARC
// Content-type otherwise (dns:, whois:, ...). The block is the ARC record's
// bytes after its header line, unchanged. Headers: WARC-Target-URI (the ARC
// URL; a space, which a URI cannot hold, written %20), WARC-Date,
// WARC-IP-Address (when the ARC field is an IP address), WARC-Warcinfo-ID,
// WARC-Block-Digest and WARC-Payload-Digest (SHA-1; the payload of an HTTP
// response is its de-chunked entity, as everywhere in Wayside). Records are
// written with the project's one encoder (warcio.RecordHead), one gzip
// member per record (warcio.MemberWriter).
//
// The link from every output record to its source is a final metadata
// record (Content-Type application/warc-fields, concurrent to the warcinfo
// record) listing, for each converted record, "arc-record: <WARC-Record-ID>
// OFFSET LENGTH ARC-HEADER-LINE": the ARC offset and stored length of the
// record it came from and its header line verbatim, and for every stretch
// of the ARC file that was not converted (a damaged record, bytes that
// start no record, a record whose date is no date) "arc-skipped: OFFSET
// LENGTH DATA-OFFSET DATA-LENGTH REASON" (stored and uncompressed extents,
// as warcio.Span gives them). A record kept shorter than its declared
// Archive-length (warcio.Record.Truncated) is written with WARC-Truncated.
//
// The output is written to a temporary file in the output directory,
// fsynced and renamed into place (then the directory is fsynced): a crash
// leaves either the whole WARC file or none. The input is opened read-only.
//
// Verify reads an ARC file and a WARC file and checks that every ARC record
// has exactly one WARC record with the same target URI, date and payload
// digest — digests computed from the bytes of both files, not taken from
// headers — that every WARC record's block digest holds, and that the WARC
// file holds no other record than its warcinfo record and the conversion's
// source list. It does not trust the reader the conversion used: the ARC
// file is framed a second time by package internal/framescan (written
// apart: the standard library's inflater, header lines looked for at every
// line start), and Verify fails when the two readings disagree on the
// records (a record one finds that the other neither reads nor reports
// unreadable) or when a framed record is neither in the WARC file nor
// listed in its source list as skipped, with the reason.
package convert
