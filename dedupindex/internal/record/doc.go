// Package record is the compact binary form of a dedup original shared by
// the index backends: pebble stores it as a primary value, Redis as a hash
// field value. Dates, offsets and lengths are varints, a urn:uuid record
// id takes 16 bytes, an IMF-fixdate Last-Modified a varint, and file names,
// MIME types and URI origins are interned ids where the backend keeps a
// table of names (FromOriginal and Record.Original take the backend's
// table as functions). The digest lives in the backend's key, not here.
//
// Two encodings: the varint one (Append, Decode) that pebble stores, and
// the packed one (AppendPacked, DecodePacked) that Redis stores, where
// memory is the cost: a format version in its header byte, 4-byte dates,
// status 200 and ETag quotes implied by flags, and the target URI
// Huffman-coded with a fixed table (urltable.go, made by gen_urltable.go
// from the shared corpus). FieldSizes reports what each field costs.
//
// The encodings are part of stored layouts: testdata/record.txt and
// testdata/packed.txt pin them, and a change needs a format version bump in
// every backend.
package record
