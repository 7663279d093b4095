package characterize

import (
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/warcio"
)

// Record is the characterization of one capture: where the record is and
// what its payload is. It is what the Store keeps per record.
type Record struct {
	// File and Offset locate the record (the capture's File and Offset).
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	// URI, Date, Type, RecordID and Digest are the capture's.
	URI      string    `json:"uri"`
	Date     time.Time `json:"date"`
	Type     string    `json:"type"`
	RecordID string    `json:"record_id,omitempty"`
	Digest   string    `json:"digest,omitempty"`
	// Result is the payload's characterization; a revisit carries its
	// original's.
	Result
	// RefersTo is a revisit's WARC-Refers-To. Original names the record a
	// revisit took its identification from ("FILE OFFSET"); Unresolved is
	// set while no characterized original is known (it is resolved when
	// one is stored).
	RefersTo   string `json:"refers_to,omitempty"`
	Original   string `json:"original,omitempty"`
	Unresolved bool   `json:"unresolved,omitempty"`
	// RefersToURI and RefersToDate are a revisit's
	// WARC-Refers-To-Target-URI and -Date: the original's URI and
	// WARC-Date, which name it when WARC-Refers-To is absent (as pywb
	// resolves revisits).
	RefersToURI  string    `json:"refers_to_uri,omitempty"`
	RefersToDate time.Time `json:"refers_to_date,omitzero"`
}

// IsRevisit reports whether r is a revisit record.
func (r *Record) IsRevisit() bool { return r.Type == "revisit" }

// Objects returns the payload followed by its nested objects.
func (r *Record) Objects() []Object {
	return append([]Object{r.Object}, r.Nested...)
}

// DisplayPath renders an object's path from the record:
// "URI → member → member".
func (r *Record) DisplayPath(o Object) string {
	return strings.Join(append([]string{r.URI}, o.Path...), " → ")
}

// Capture characterizes the record rec, whose Capture is c (from
// rec.Capture: the one converter). rec must have been read with
// warcio.Options.KeepPayload of at least the Identifier's MaxObject for
// the payload to be identified whole. A revisit is returned unresolved,
// without reading anything: the Store gives it its original's
// identification.
func (id *Identifier) Capture(rec *warcio.Record, c wayside.Capture) Record {
	r := Record{File: c.File, Offset: c.Offset, URI: c.URI, Date: c.Date, Type: c.Type, RecordID: c.RecordID, Digest: c.Digest}
	if c.IsRevisit() {
		if c.RevisitOf != nil {
			r.RefersTo, r.RefersToURI, r.RefersToDate = c.RevisitOf.RecordID, c.RevisitOf.TargetURI, c.RevisitOf.Date
		}
		r.Unresolved = true
		return r
	}
	enc := ""
	if rec.HTTP != nil {
		enc = rec.HTTP.Header.Get("Content-Encoding")
	}
	p := Payload{Bytes: rec.Payload, Length: rec.PayloadLength, Name: c.URI, MIME: hintMIME(c.MIME), Encoding: enc, Truncated: c.Truncated}
	// Identical bytes with identical hints identify identically: a
	// duplicate payload (the digest computed here, over the bytes) reuses
	// the earlier result.
	key := ""
	if rec.PayloadDigest != "" && !c.DigestMismatch && c.Truncated == "" && int64(len(rec.Payload)) == rec.PayloadLength {
		key = rec.PayloadDigest + "\x00" + nameHint(c.URI) + "\x00" + p.MIME + "\x00" + strings.ToLower(enc)
		if res, ok := id.cache.get(key); ok {
			r.Result = res
			return r
		}
	}
	r.Result = id.Identify(p)
	if key != "" {
		id.cache.put(key, r.Result)
	}
	return r
}

// nameHint is the part of a URL siegfried's name matcher looks at: the
// lower-cased extension of the last path segment.
func nameHint(uri string) string {
	p := uri
	if u, err := url.Parse(uri); err == nil && u.Scheme != "" {
		p = u.Path
	}
	return strings.ToLower(path.Ext(path.Base(p)))
}

// resultCache keeps recent results by payload digest and hints, in two
// generations: when the current one is full it becomes the previous one
// and the previous one is dropped.
type resultCache struct {
	mu        sync.Mutex
	size      int
	cur, prev map[string]Result
}

func (c *resultCache) get(k string) (Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.cur[k]; ok {
		return r, true
	}
	r, ok := c.prev[k]
	if ok {
		c.putLocked(k, r)
	}
	return r, ok
}

func (c *resultCache) put(k string, r Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, r)
}

func (c *resultCache) putLocked(k string, r Result) {
	if c.size <= 0 {
		return
	}
	if len(c.cur) >= c.size {
		c.prev, c.cur = c.cur, nil
	}
	if c.cur == nil {
		c.cur = make(map[string]Result, c.size)
	}
	c.cur[k] = r
}
