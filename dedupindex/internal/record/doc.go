// Package record is the compact binary form of a dedup original shared by
// the index backends: pebble stores it as a primary value, Redis as a hash
// field value. Dates, offsets and lengths are varints, a urn:uuid record
// id takes 16 bytes, an IMF-fixdate Last-Modified a varint, and file names,
// MIME types and URI origins are interned ids where the backend keeps a
// table of names (FromOriginal and Record.Original take the backend's
// table as functions). The digest lives in the backend's key, not here.
//
// The encoding is part of stored layouts: testdata/record.txt pins it, and
// a change needs a format version bump in every backend.
package record
