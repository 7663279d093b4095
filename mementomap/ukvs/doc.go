// Package ukvs reads and writes Unified Key Value Store files, the text
// format of MementoMaps (oduwsdl/ORS ukvs.md).
//
// A UKVS file starts with header lines beginning with '!' (!context, !id,
// !fields, !meta, ...) followed by data lines sorted by byte value:
//
//	<key> <frequency> [single-line JSON block]
//
// The frequency is "M/R": M mementos (URI-Ms) and R original URIs (URI-Rs),
// either part possibly missing ("200", "/50", "/") and each possibly
// suffixed '+' (lower bound), '-' (upper bound) or '~' (estimate). "0" is an
// exclusion and "0/20" a blocked set.
//
// Reading is lenient (runs of blanks, CRLF line ends, JSON with unquoted
// object keys as in the draft's examples); writing is strict (one space
// between fields, strict JSON, byte-order sorted keys, headers first). A file
// written by this package reads back and writes out byte for byte the same.
package ukvs
