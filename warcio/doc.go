// Package warcio reads WARC files leniently and fast, and parses the HTTP
// messages recorded in them.
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
// in the middle with ErrCorrupt, after which Next resynchronises on the next
// gzip member or "WARC/" line.
package warcio
