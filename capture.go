package wayside

import (
	"context"
	"sync"
	"time"
)

// Capture describes one WARC record that is durably on disk.
type Capture struct {
	// URI is the record's WARC-Target-URI.
	URI string `json:"uri"`
	// Date is the record's WARC-Date.
	Date time.Time `json:"date"`
	// RecordID is the WARC-Record-ID, including the angle brackets.
	RecordID string `json:"record_id"`
	// Type is the WARC-Type: "response", "revisit", "resource", "request", ...
	Type string `json:"type"`
	// Digest is the canonical payload digest (see package digest). For a
	// revisit it is the original's payload digest.
	Digest string `json:"digest,omitempty"`
	// Status is the HTTP status code, 0 when the record carries no HTTP response.
	Status int `json:"status,omitempty"`
	// MIME is the payload's media type without parameters ("text/html").
	MIME string `json:"mime,omitempty"`
	// File is the WARC file's base name as it will be once closed (without
	// an ".open" suffix); Offset and Length locate the record in it (Length
	// counts the stored bytes, i.e. the gzip member for .warc.gz files).
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
	// PayloadLength is the length of the HTTP entity (after removing
	// transfer-encoding); for a revisit, the original's payload length.
	PayloadLength int64 `json:"payload_length,omitempty"`
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
}

// IsRevisit reports whether c is a revisit record.
func (c Capture) IsRevisit() bool { return c.Type == "revisit" }

// Ref identifies the original capture a revisit points at.
type Ref struct {
	RecordID  string    `json:"record_id"`
	TargetURI string    `json:"target_uri"`
	Date      time.Time `json:"date"`
}

// Subscriber consumes durable captures. OnCapture must not block for long;
// subscribers that do slow work queue it themselves.
type Subscriber interface {
	OnCapture(ctx context.Context, c Capture)
}

// SubscriberFunc adapts a function to Subscriber.
type SubscriberFunc func(ctx context.Context, c Capture)

// OnCapture calls f.
func (f SubscriberFunc) OnCapture(ctx context.Context, c Capture) { f(ctx, c) }

// Fanout delivers each capture to every subscriber in the order they were
// added. It is safe for concurrent use.
type Fanout struct {
	mu   sync.RWMutex
	subs []Subscriber
}

// Add registers s.
func (f *Fanout) Add(s Subscriber) {
	f.mu.Lock()
	f.subs = append(f.subs, s)
	f.mu.Unlock()
}

// OnCapture delivers c to every registered subscriber.
func (f *Fanout) OnCapture(ctx context.Context, c Capture) {
	f.mu.RLock()
	subs := f.subs
	f.mu.RUnlock()
	for _, s := range subs {
		s.OnCapture(ctx, c)
	}
}
