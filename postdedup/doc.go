// Package postdedup deduplicates existing WARC collections after the crawl
// (the WARCrefs pipeline) and proves that nothing is lost.
//
// Stages (wayside dedup assess|manifest|resolve|rewrite|validate|run):
//
//   - Manifest: one line per record a CDXJ index lists, described by the
//     one converter (warcio.Record.Capture), sorted by payload digest with
//     bounded memory (cdxj.Sorter spills runs to disk), splittable into
//     parts by digest (a cluster never spans two parts); see "Manifest and
//     plan files" below. The digest is the declared one checked against
//     the bytes (Capture's digest rule), or recomputed with
//     md5/sha1/sha256/sha512. Inputs are read mapped (warcio.Options.Map);
//     the second framing validation uses is made from the same
//     inflation (see Validate).
//     While scanning, a bounded cache of payloads lets later copies be
//     compared byte for byte as they are read (Entry.SameAs): with
//     declared digests a copy's cluster is known from its header, so its
//     bytes are compared with the cached payload as they stream by. A
//     payload pushed out of the cache (an eighth of --mem-mb by default)
//     leaves its record's location, and a later copy reads the original's
//     payload back from the input (one inflation, no hashing), so a small
//     cache still compares every copy during the scan and memory does not
//     grow with the input.
//   - Resolve: walks each cluster in copy-number order — earliest WARC-Date,
//     then input path (byte order), then offset — so the earliest eligible
//     capture is the original and is never rewritten. Every later copy is
//     compared with it byte for byte (during the scan, or by reading both
//     records again); a true collision keeps the copy in full and makes it
//     a reference of its own. Only complete, verified HTTP responses with
//     a date and record ID, read without leniency, take part; damaged
//     records (digest mismatch, truncated, WARC/0.17, shared gzip member)
//     are kept as they are and reported by file and offset. Records that
//     revisits already in the input refer to are pinned (kept in full),
//     found with a sort-join so memory stays bounded. Optionally, originals
//     in other collections are taken from a Wayside dedup index, read back
//     and compared before use.
//   - Rewrite: new files of the same names in an output directory (never
//     in place): the bytes between copies copied as stored (gzip members
//     untouched, copy_file_range), each copy replaced by an
//     identical-payload-digest revisit built with Wayside's one record
//     encoder (warcio.Draft.Marshal): the copy's WARC header fields,
//     WARC-Record-ID and WARC-Date kept (records that refer to it still
//     do), its HTTP head as the block, WARC-Truncated: length, the
//     original's payload digest, WARC-Refers-To, -Target-URI and -Date
//     (verbatim), the profile of the copy's WARC version. A sorted CDXJ
//     (cdxj.FromCapture) is written beside each file. Temporary file,
//     fsync, rename: a crash leaves an output complete or absent.
//   - Validate: checks every claim of each output's layout against the
//     bytes — the output tiles into input ranges (compared byte for byte
//     with the input as it is now, both files mapped) and revisits (one per
//     planned copy, read back and checked field by field); every original
//     is a full record of the input with the copy's digest, not rewritten
//     (a sort-join); CDXJ sorted and complete; each input is framed a
//     second way (internal/framescan: its own member walk and record
//     framing) and that framing is compared with the manifest scan's
//     reading of the input, which the scan wrote as it read (a framing
//     record per input beside the manifest, MANIFEST.framing/NNNNNN;
//     framing.go): every record one finds the other read or reported
//     unreadable, and each revisit replaces exactly one framed record.
//     The second framing is made during the manifest scan, from the gzip
//     members the scan's reader inflates (warcio.Options.Tap,
//     framescan.Tap, in a goroutine of its own fed through four 256 KiB
//     buffers), so no input is inflated twice: framescan proves each
//     member itself — its own parse of the gzip header, the CRC-32 and
//     length of the bytes it was given against the member's trailer —
//     and frames every stretch not so proved with its own walk and
//     inflater (klauspost/compress); the result equals framescan.File's
//     (see framescan's doc). The scan writes it beside the framing record
//     (MANIFEST.framing/NNNNNN.framed) as framescan decides each record
//     (memory holds only the records whose declared end the framing has
//     not passed), and validation reads it back. A
//     manifest without framed records, a framed record that cannot be
//     read, and --independent-inflate (ValidateOptions.IndependentInflate)
//     frame the input on its own again (framescan.File). Deep mode re-reads every
//     output record with warcio and compares it with the manifest, record
//     counts included. The stamp it writes (validated.json, format 2)
//     carries each output's XXH64 checksum, so Replace can tell the output
//     is still what was validated.
//   - Replace: only what Validate stamped, after checking nothing changed;
//     one rename(2) per file, the input kept as a hard link in
//     OUTDIR/.wayside-dedup/retired. Interrupted, a run of the same inputs
//     finishes it; meanwhile every input path holds its input or its
//     validated output, and either way every revisit resolves.
//
// # Manifest and plan files
//
// Both are text: a first line "#wayside-dedup-manifest" (or
// "#wayside-dedup-plan"), a tab and a JSON header whose "format" is 2,
// then (manifests) "#file" and "#problem" lines, then one line per entry
// of tab-separated fields. Text fields escape backslash, tab, newline and
// carriage return as \\, \t, \n and \r; offsets in the leading fields are
// zero-padded to 15 digits, so that byte order of the lines is the order
// of those fields; dates are YYYYMMDDhhmmss.nnnnnnnnn (UTC); flags are
// "1" or empty; a header list is its count followed by name, value pairs.
// Format 1 (a JSON object per line) is refused with a message to write
// the file again.
//
// A manifest entry line (sorted by its first four fields):
//
//	KEY DATE PATH OFFSET ROLE RECORD-ID DIGEST VERSION TYPE URI DATE-TEXT
//	FILE LENGTH PAYLOAD-LENGTH STATUS DIGEST-MISMATCH DIGEST-AS-WRITTEN MIME
//	MIME-DETECTED METADATA TRUNCATED SCOPE PROFILE ETAG LAST-MODIFIED
//	REVISIT REFERS-TO REFERS-TO-URI REFERS-TO-DATE HEAD-LENGTH NOT-ORIGINAL
//	NOT-DUPLICATE SAME-AS HTTP-HEAD HEADER-COUNT [NAME VALUE]...
//
// KEY is the cluster key ("-" for none), ROLE "o" when the record may be an
// original, DIGEST its Capture digest in canonical form (DIGEST-AS-WRITTEN
// repeats it as written when that differs), REVISIT a flag saying the
// REFERS-TO fields are set; NOT-ORIGINAL and NOT-DUPLICATE say why the
// record may not be one ("code: detail"); SAME-AS, HTTP-HEAD and the
// header list are set when the scan found the payload equal to that of
// the record SAME-AS names (PATH#OFFSET).
//
// A plan line (sorted by file and offset): the copy to rewrite, then the
// original its revisit refers to:
//
//	PATH OFFSET LENGTH RECORD-ID URI VERSION PAYLOAD-LENGTH KEY
//	ORIG-RECORD-ID ORIG-URI ORIG-DATE-TEXT ORIG-DIGEST ORIG-PAYLOAD-LENGTH
//	ORIG-PATH ORIG-FILE ORIG-OFFSET ORIG-LENGTH ORIG-EXTERNAL HTTP-HEAD
//	HEADER-COUNT [NAME VALUE]...
package postdedup
