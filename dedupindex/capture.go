package dedupindex

import (
	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/digest"
)

// OriginalFromCapture returns the original a durably written response
// capture provides, for Commit or Put. Revisits are not originals: callers
// must not commit them.
func OriginalFromCapture(c wayside.Capture) Original {
	return Original{
		Digest:        c.Digest,
		TargetURI:     c.URI,
		Date:          c.Date,
		RecordID:      c.RecordID,
		File:          c.File,
		Offset:        c.Offset,
		Length:        c.Length,
		PayloadLength: c.PayloadLength,
		Status:        c.Status,
		MIME:          c.MIME,
		ETag:          c.ETag,
		LastModified:  c.LastModified,
	}
}

// SeedEntry returns the index entry a durably written capture seeds under
// the policy (ingest of other crawlers' WARCs, import): the original it
// provides and its key in the read-write scope (with the URL key under
// MatchURL). ok is false for captures the policy keeps out: anything but a
// complete response or resource record (wayside.Capture.Complete: no
// revisit, truncation or digest mismatch), an empty or too small payload,
// a response status outside the policy's statuses, a capture of anything
// but an http(s) URI (dns:, metadata:, ...: no crawler deduplicates
// against them), a capture without date or stored length (an ARC record
// has no record id: Target-URI and Date locate it). err
// reports a capture that qualifies but cannot be stored (its digest or date
// is unusable).
func (d *Deduper) SeedEntry(c wayside.Capture) (e Entry, ok bool, err error) {
	if !c.Complete() || c.PayloadLength < d.pol.MinPayloadSize || !isHTTPURI(c.URI) {
		return Entry{}, false, nil
	}
	if c.Type == "response" && !d.pol.statusOK(c.Status) {
		return Entry{}, false, nil
	}
	if c.URI == "" || c.Date.IsZero() || c.Length <= 0 {
		return Entry{}, false, nil
	}
	k, err := d.Key(d.pol.Scope, c.URI, c.Digest)
	if err != nil {
		return Entry{}, false, err
	}
	if dg, _ := digest.Parse(k.Digest); isEmptyDigest(dg) {
		return Entry{}, false, nil
	}
	o, err := CheckOriginal(k, OriginalFromCapture(c))
	if err != nil {
		return Entry{}, false, err
	}
	return Entry{Key: k, Original: o}, true, nil
}
