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
// # Tap mode: framing the bytes another reader inflates
//
// Tap (NewTap; its methods are warcio.MemberTap's) frames a compressed
// file from the gzip members another reader inflates while it reads,
// instead of inflating the file a second time, and takes nothing that
// reader says on trust. For every member reported complete at stored
// offset off with stored length n, the scan parses the gzip header at
// off itself (magic, CM 8, reserved flags zero, FEXTRA, FNAME and
// FCOMMENT skipped, FHCRC checked, as the inflater File uses accepts
// them), computes the CRC-32 (IEEE) and the length of the bytes it was
// given, and compares them with the 8-byte trailer it reads itself at
// off+n-8 (CRC32 and ISIZE, little endian). The trailer is the
// producer's checksum of the member's original data, written when the
// file was: bytes that match it are that data, whatever inflater
// produced them (short of a CRC-32 collision, which a faulty inflater
// does not produce by accident). The records in them are then found by
// this package's own record framing, as File finds them.
//
// Members are taken in file order against a cursor of the scan's own:
// a member is framed from the reader's bytes only when it starts where
// the scan's own walk stands. Every stretch not covered by a member so
// proved — bytes before the next reported member, a member reported
// incomplete, or whose trailer does not match, or that is reported at an
// offset the walk does not reach, what the reader found unreadable, the
// file's tail — is framed by File's own path: its member walk,
// resynchronisation and inflater, over just that stretch (a member found
// there may carry the walk past a reported one, which is then not used).
// Framing a member from the reader's bytes streams them as they come;
// when the member is not proved at its end, what its framing found is
// undone and the walk frames it again. So every stored byte is either in
// a member proved by its own trailer and framed by this package's record
// framing, or framed entirely on its own, and the Result is the one File
// gives (tests compare them on the corpus, damaged layouts and a tap
// that flips, drops or adds bytes and misreports lengths, offsets and
// completeness). What the trailer cannot tell is where a member starts:
// a reader that dropped a whole member's bytes and reported the next
// member's bytes and stretch as starting at the dropped one's offset
// would pass it, and the dropped member's records would be missing from
// both framings. So the scan also inflates, with its own inflater from
// the stored bytes after the header at off, the member's first 512 data
// bytes (proveHead: a WARC record's first header lines, its
// WARC-Record-ID among them, or an ARC URL line) and requires the
// reader's bytes to begin with them; the "skip" case of the fault tests
// is refused by this check alone. Two members that agree in their first
// 512 bytes hold the same record: a reader that dropped one of two such
// copies is the one case the proof cannot tell. The head is inflated by
// a small inflater of this package that stops after those 512 bytes
// (headinflate.go: a general inflater builds full decoding tables and
// inflates all the input it is given, which cost more than framing the
// member); a head it cannot inflate from the first 1,536 stored bytes,
// or inflates to other bytes, is left to klauspost/compress's inflater
// over the whole member, so it can make the proof pass only with the
// member's own first bytes. About 6 µs per member. Plain
// files need no inflation: Tap frames them itself, ignoring the reader.
// Tap can pass its records on as it decides them instead of holding
// them all (NewTap's emit): after each proved member or step of its own
// walk — points where nothing is undone any more — every record whose
// declared end lies more than the slack before the data framed so far is
// decided as resolve would decide it (no header or member end found later
// can lie near its end), so memory holds only the records whose end the
// framing has not passed (decided every 4 MiB inside a plain file or a
// member of the walk too).
//
// NewTapMapped reads the file through a handle on a mapping the reader
// it frames from also reads (the manifest scan does so): only the
// kernel's pages are shared, so they are faulted in once for both; the
// Tap still reads every byte it proves or walks itself.
//
// convert verify and dedup validate compare the records warcio reads, and
// the records an output holds, with the records found here.
package framescan
