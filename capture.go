package wayside

import (
	"context"
	"sync/atomic"
	"time"
)

// Capture describes one WARC (or ARC) record that is durably on disk.
//
// There is exactly one converter from a record to a Capture:
// warcio.Record.Capture. Every producer (the crawler, the WARC ingester,
// `wayside cdxj`, index import, MementoMap generation) uses it, and the
// CDXJ line of a capture is derived from the Capture alone
// (cdxj.FromCapture), so all entry points index a record identically.
type Capture struct {
	// URI is the record's WARC-Target-URI (for a warcinfo record without
	// one, its WARC-Filename, as pywb indexes it).
	URI string `json:"uri"`
	// Date is the record's WARC-Date.
	Date time.Time `json:"date"`
	// RecordID is the WARC-Record-ID, including the angle brackets.
	RecordID string `json:"record_id"`
	// Type is the WARC-Type: "response", "revisit", "resource", "request", ...
	Type string `json:"type"`
	// Digest is the payload digest, in canonical form (see package digest)
	// whenever it parses. The rule, applied by every producer:
	//   - a revisit carries its original's digest (its WARC-Payload-Digest);
	//   - any other record carries its declared WARC-Payload-Digest when it
	//     has one: that is the digest the writer, its revisits and pywb's
	//     indexes agree on;
	//   - without a declared digest, the digest computed over the payload
	//     (the HTTP entity after removing chunked transfer coding, content
	//     encoding kept; the whole block for non-HTTP records).
	// DigestMismatch tells when the declared digest is not borne out by the
	// bytes.
	Digest string `json:"digest,omitempty"`
	// DigestMismatch is set when the declared payload digest matches neither
	// the de-chunked payload nor (for chunked bodies) the bytes with their
	// chunk framing, which some writers digested (Heritrix #769, JWAT,
	// wget). Such a record is damaged or truncated: it is indexed, but
	// never made a dedup original.
	DigestMismatch bool `json:"digest_mismatch,omitempty"`
	// Status is the HTTP status code of the record's HTTP response (for a
	// revisit, the status line it keeps: the original's, 304 for
	// server-not-modified); 0 when the record carries no HTTP response.
	Status int `json:"status,omitempty"`
	// MIME is the media type as indexes write it (pywb's rule): the HTTP
	// Content-Type (the WARC Content-Type for records without HTTP) cut at
	// the first ";" or space, case kept; "unk" for an HTTP message without
	// one; "warc/revisit" is not used here (cdxj writes it for revisits).
	MIME string `json:"mime,omitempty"`
	// MIMEDetected is the WARC-Identified-Payload-Type header.
	MIMEDetected string `json:"mime_detected,omitempty"`
	// Metadata is the WARC-Json-Metadata header, kept as text.
	Metadata string `json:"metadata,omitempty"`
	// Dir is the directory holding the WARC file, as the producer knows it
	// ("" when unknown); File is the file's base name as it will be once
	// closed (without an ".open" suffix). Offset and Length locate the
	// record in it as CDX indexes do: Length is the gzip member for
	// .warc.gz files; for uncompressed files it ends with the record's
	// block (the CRLF pair closing the record is not counted, as pywb and
	// warcio count it).
	Dir    string `json:"dir,omitempty"`
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
	// PayloadLength is the length of the HTTP entity (after removing
	// transfer-encoding); for a revisit, the original's payload length when
	// known (0 otherwise).
	PayloadLength int64 `json:"payload_length,omitempty"`
	// Truncated is the WARC-Truncated reason of a response or resource
	// record whose payload is incomplete ("length", "time", ...). Revisits
	// written with "length" (their body dropped on purpose) do not set it.
	Truncated string `json:"truncated,omitempty"`
	// Scope is the dedup scope (collection) the capture belongs to.
	Scope string `json:"scope,omitempty"`
	// RevisitOf is set for revisit records.
	RevisitOf *Ref `json:"revisit_of,omitempty"`
	// Profile is the revisit profile URI (WARC-Profile) for revisit records.
	Profile string `json:"profile,omitempty"`
	// ETag and LastModified are the response's validators, kept so a later
	// crawl can send conditional requests.
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`

	// RecordBytes, when not nil, is the record exactly as it is in the
	// file, uncompressed: WARC header, block and the closing CRLF pair.
	// A producer that still holds the bytes it has just written sets it
	// (the crawl writer does, when its Subscriber wants them), so a
	// consumer that needs the payload parses these bytes
	// (warcio.NewReader over a bytes.Reader gives the same Record a read
	// back would) instead of reading the record back from its WARC file.
	// It is optional: a consumer must read the record back when it is nil
	// (other producers, captures caught up from CDXJ lines, and captures
	// for which a queue's RecordBudget was spent). The bytes are shared
	// and read-only; they are never serialised.
	RecordBytes []byte `json:"-"`
}

// IsRevisit reports whether c is a revisit record.
func (c Capture) IsRevisit() bool { return c.Type == "revisit" }

// IsCapture reports whether c is a capture in the replay sense: a response,
// revisit, resource or conversion record (what TimeMaps, MementoMaps and
// characterization count).
func (c Capture) IsCapture() bool {
	switch c.Type {
	case "response", "revisit", "resource", "conversion":
		return true
	}
	return false
}

// Complete reports whether c holds its whole payload with a digest its bytes
// bear out: a response or resource record, not truncated, without a digest
// mismatch, with a digest. Only complete captures may become dedup originals
// (policies such as status and minimum size are applied on top, by
// dedupindex).
func (c Capture) Complete() bool {
	return (c.Type == "response" || c.Type == "resource") && c.Truncated == "" && !c.DigestMismatch && c.Digest != ""
}

// RecordBytesWanter is implemented by a Subscriber that uses
// Capture.RecordBytes. A Fanout hands the bytes only to consumers that
// want them (and strips them for the others), and reports whether any of
// its consumers does, so a producer keeps them only when they are used.
type RecordBytesWanter interface {
	WantsRecordBytes() bool
}

// WantsRecordBytes reports whether s (a consumer, or a Fanout) wants
// Capture.RecordBytes.
func WantsRecordBytes(s Subscriber) bool {
	w, ok := s.(RecordBytesWanter)
	return ok && w.WantsRecordBytes()
}

// RecordBudget bounds the bytes of Capture.RecordBytes a queue holds at
// once, so handing record bytes to a consumer that falls behind never
// holds more than the budget in memory: a capture that does not fit
// loses its RecordBytes (its consumer reads the record back instead). A
// queue calls Take as a capture enters it and Release once it is done
// with it. A RecordBudget is safe for concurrent use.
type RecordBudget struct {
	limit    int64
	held     atomic.Int64
	stripped atomic.Int64
}

// NewRecordBudget returns a budget of limit bytes (<= 0: none fit).
func NewRecordBudget(limit int64) *RecordBudget { return &RecordBudget{limit: limit} }

// Take keeps c.RecordBytes when they fit in what is left of the budget
// and returns their size (to give back with Release); otherwise it sets
// c.RecordBytes to nil and returns 0.
func (b *RecordBudget) Take(c *Capture) int64 {
	n := int64(len(c.RecordBytes))
	if n == 0 {
		c.RecordBytes = nil
		return 0
	}
	for {
		held := b.held.Load()
		if held+n > b.limit {
			c.RecordBytes = nil
			b.stripped.Add(1)
			return 0
		}
		if b.held.CompareAndSwap(held, held+n) {
			return n
		}
	}
}

// Release gives back n bytes taken by Take.
func (b *RecordBudget) Release(n int64) {
	if n != 0 {
		b.held.Add(-n)
	}
}

// Held returns the bytes taken and not yet released.
func (b *RecordBudget) Held() int64 { return b.held.Load() }

// Stripped counts the captures that lost their RecordBytes because they
// did not fit.
func (b *RecordBudget) Stripped() int64 { return b.stripped.Load() }

// Ref identifies the original capture a revisit points at.
type Ref struct {
	RecordID  string    `json:"record_id"`
	TargetURI string    `json:"target_uri"`
	Date      time.Time `json:"date"`
}

// Subscriber consumes durable captures: a consumer of the capture spine
// (the live MementoMap, characterization, the capture index, ...).
//
// Producers never call a consumer directly: they deliver to a Fanout, which
// gives every consumer its own queue and goroutine, so a slow or failing
// consumer never blocks the WARC or dedup-index path. OnCapture is called
// from one goroutine per consumer, in the order the producer delivered the
// captures. An error is counted and reported (Fanout.Stats, Close); it does
// not stop delivery.
type Subscriber interface {
	OnCapture(ctx context.Context, c Capture) error
}

// SubscriberFunc adapts a function to Subscriber.
type SubscriberFunc func(ctx context.Context, c Capture) error

// OnCapture calls f.
func (f SubscriberFunc) OnCapture(ctx context.Context, c Capture) error { return f(ctx, c) }

// Resyncer is implemented by consumers that can catch up on their own (from
// the CDXJ files beside the WARCs, or by re-reading WARCs) after the Fanout
// dropped captures for them because their queue was full. The Fanout calls
// Resync from the consumer's goroutine once its queue has drained; a nil
// error clears the consumer's "behind" state.
type Resyncer interface {
	Resync(ctx context.Context) error
}
