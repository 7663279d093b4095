package crawl

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

// fetched is one completed exchange, ready to be recorded.
type fetched struct {
	uri       string
	date      time.Time
	ip        string
	rawReq    []byte
	rawResp   []byte
	resp      *httpResponse
	truncated string
	notModOf  *dedupindex.Original // validators sent came from this original
}

// Recording an exchange decides between a full response and a revisit,
// writes the records (write), waits until they are durable and then
// commits or cancels the claim (finish).
//
// Ordering (no revisit may point at a record that is not durable, no index
// entry may point at nothing): a digest is claimed (pending) before the full
// response is written; the claim is committed only after the fsync covering
// the record; any failure cancels it. A pending claim of another fetch makes
// this one write a full response without committing. Revisits are written
// only for committed originals.

// recording is an exchange whose records are written, not yet durable.
type recording struct {
	x         *fetched
	wr        warcfile.Written
	orig      *dedupindex.Original // the original a revisit stands for
	ticket    *dedupindex.Ticket   // the claim to commit once durable
	truncated string               // the WARC-Truncated value written
}

// write is the first half of record: the dedup decision (a claim), the
// records built and written.
func (r *Recorder) write(ctx context.Context, x *fetched) (*recording, error) {
	p := x.resp
	ver := r.opts.Writer.Version()
	respID, reqID := warcio.NewRecordID(), warcio.NewRecordID()
	var (
		orig   *dedupindex.Original
		ticket *dedupindex.Ticket
		prof   string
	)
	switch {
	case x.notModOf != nil && p.status == 304:
		orig, prof = x.notModOf, warcio.NotModifiedProfile(ver)
	case r.opts.Dedup != nil && x.truncated == "":
		cand := dedupindex.Candidate{URI: x.uri, Status: p.status, Digest: p.digest, PayloadLength: int64(len(p.payload)), Date: x.date}
		dec, err := r.opts.Dedup.Decide(ctx, cand)
		if err == nil && dec.Reason == dedupindex.ReasonPending && r.claims.wait(ctx, dec.Key) {
			// The pending claim was this recorder's and is settled now:
			// committed (this becomes a revisit) or cancelled.
			dec, err = r.opts.Dedup.Decide(ctx, cand)
		}
		switch {
		case err != nil:
			r.st.errors.Add(1)
			r.log.Warn("crawl: dedup decision failed; writing a full response", "uri", x.uri, "err", err)
		case dec.Action == dedupindex.WriteRevisit:
			o := dec.Original
			if r.confirm(ctx, x, &o) {
				orig, prof = &o, warcio.IdenticalPayloadProfile(ver)
			}
		case dec.Action == dedupindex.WriteResponseAndCommit:
			t := dec.Ticket
			ticket = &t
			r.claims.add(t.Key)
		case dec.Reason == dedupindex.ReasonPending:
			r.st.pending.Add(1)
		default:
			r.skip(string(dec.Reason))
		}
	}

	resp := &warcio.Draft{Type: "response", ID: respID, Date: x.date}
	resp.Fields = []warcio.Field{{Name: "WARC-Target-URI", Value: x.uri}}
	if x.ip != "" {
		resp.Fields = append(resp.Fields, warcio.Field{Name: "WARC-IP-Address", Value: x.ip})
	}
	resp.Fields = append(resp.Fields, warcio.Field{Name: "WARC-Concurrent-To", Value: reqID}, warcio.Field{Name: "Content-Type", Value: "application/http; msgtype=response"})
	if orig != nil {
		resp.Type = "revisit"
		origDigest := orig.Digest
		if d, err := digest.Normalize(origDigest); err == nil {
			origDigest = d
		}
		resp.Fields = append(resp.Fields,
			warcio.Field{Name: "WARC-Profile", Value: prof},
			warcio.Field{Name: "WARC-Payload-Digest", Value: origDigest})
		if orig.RecordID != "" {
			// An original imported from an ARC file has no record ID;
			// Target-URI and Date still locate it (replay tools use those).
			resp.Fields = append(resp.Fields, warcio.Field{Name: "WARC-Refers-To", Value: angle(orig.RecordID)})
		}
		resp.Fields = append(resp.Fields,
			warcio.Field{Name: "WARC-Refers-To-Target-URI", Value: orig.TargetURI},
			warcio.Field{Name: "WARC-Refers-To-Date", Value: orig.Date.UTC().Format(time.RFC3339Nano)},
		)
		if p.status != 304 {
			// The body is dropped: only the status line and headers stay.
			resp.Fields = append(resp.Fields, warcio.Field{Name: "WARC-Truncated", Value: "length"})
			resp.Block = x.rawResp[:p.headLen]
		} else {
			resp.Block = x.rawResp
		}
	} else {
		resp.Fields = append(resp.Fields, warcio.Field{Name: "WARC-Payload-Digest", Value: p.digest})
		if x.truncated != "" {
			resp.Fields = append(resp.Fields, warcio.Field{Name: "WARC-Truncated", Value: x.truncated})
		}
		resp.Block = x.rawResp
		if precompressed(p.header) {
			resp.IncompressibleFrom = p.headLen
		}
	}
	if len(resp.Block) < len("HTTP/1.1 200\r\n\r\n")-4 {
		return nil, fmt.Errorf("crawl: record %s: response block of %d bytes (head %d of %d)", x.uri, len(resp.Block), p.headLen, len(x.rawResp))
	}
	reqRec := &warcio.Draft{Type: "request", ID: reqID, Date: x.date}
	reqRec.Fields = []warcio.Field{{Name: "WARC-Target-URI", Value: x.uri}}
	if x.ip != "" {
		reqRec.Fields = append(reqRec.Fields, warcio.Field{Name: "WARC-IP-Address", Value: x.ip})
	}
	reqRec.Fields = append(reqRec.Fields, warcio.Field{Name: "WARC-Concurrent-To", Value: respID}, warcio.Field{Name: "Content-Type", Value: "application/http; msgtype=request"})
	reqRec.Block = x.rawReq

	wr, err := r.opts.Writer.Write(resp, reqRec)
	if err != nil {
		r.cancelClaim(ctx, x.uri, ticket)
		return nil, fmt.Errorf("crawl: record %s: %w", x.uri, err)
	}
	return &recording{x: x, wr: wr, orig: orig, ticket: ticket, truncated: resp.Get("WARC-Truncated")}, nil
}

// cancelClaim drops a claim (nil: none) that will not be committed.
func (r *Recorder) cancelClaim(ctx context.Context, uri string, ticket *dedupindex.Ticket) {
	if ticket != nil {
		if err := r.opts.Dedup.Cancel(ctx, *ticket); err != nil {
			r.log.Warn("crawl: dedup cancel failed", "uri", uri, "err", err)
		}
		r.claims.settle(ticket.Key)
	}
}

// claimWaitMax bounds how long a fetch waits for a pending claim of its
// own recorder before it writes a full response instead.
const claimWaitMax = 10 * time.Second

// ownClaims are the dedup claims this recorder holds (written, not yet
// durable and committed). A fetch whose payload another of its fetches
// has claimed waits until that claim is settled, then decides again, so
// a duplicate fetched while its original awaits its fsync (a group
// commit gathers many) still becomes a revisit. Claims of other
// processes are not waited for: the fetch writes a full response.
type ownClaims struct {
	mu sync.Mutex
	m  map[dedupindex.Key]chan struct{}
}

func (o *ownClaims) add(k dedupindex.Key) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[dedupindex.Key]chan struct{}{}
	}
	if _, ok := o.m[k]; !ok {
		o.m[k] = make(chan struct{})
	}
}

// settle wakes the fetches waiting for the claim of k.
func (o *ownClaims) settle(k dedupindex.Key) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ch, ok := o.m[k]; ok {
		close(ch)
		delete(o.m, k)
	}
}

// wait waits until the claim of k held by this recorder is settled and
// reports whether it was one of its own and settled in time.
func (o *ownClaims) wait(ctx context.Context, k dedupindex.Key) bool {
	o.mu.Lock()
	ch, ok := o.m[k]
	o.mu.Unlock()
	if !ok {
		return false
	}
	t := time.NewTimer(claimWaitMax)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// finish is the second half of record: it waits until the records of rc
// are durable (batched: in a group commit, see
// warcfile.Writer.WaitDurableBatched), then commits or cancels the claim
// and counts the exchange.
func (r *Recorder) finish(ctx context.Context, rc *recording, batched bool) (*Result, error) {
	x, p, orig, ticket := rc.x, rc.x.resp, rc.orig, rc.ticket
	wait := r.opts.Writer.WaitDurable
	if batched {
		wait = r.opts.Writer.WaitDurableBatched
	}
	caps, err := wait(ctx, rc.wr)
	if err != nil {
		r.cancelClaim(ctx, x.uri, ticket)
		return nil, fmt.Errorf("crawl: record %s: %w", x.uri, err)
	}
	if ticket != nil {
		// caps[0] is the response record, as written and read back.
		o := dedupindex.OriginalFromCapture(caps[0])
		if err := r.opts.Dedup.Commit(ctx, *ticket, o); err != nil {
			// The record is durable; only the dedup opportunity is lost.
			r.st.errors.Add(1)
			r.log.Warn("crawl: dedup commit failed", "uri", x.uri, "err", err)
			r.cancelClaim(ctx, x.uri, ticket)
		} else {
			r.claims.settle(ticket.Key)
			r.log.Debug("crawl: original committed", "digest", o.Digest, "uri", o.TargetURI, "record", o.RecordID, "file", o.File, "offset", o.Offset)
		}
	}
	switch {
	case orig == nil:
		r.st.responses.Add(1)
	case p.status == 304:
		r.st.revNotMod.Add(1)
		r.st.saved.Add(orig.PayloadLength)
	default:
		r.st.revDigest.Add(1)
		r.st.saved.Add(int64(len(p.payload)))
	}
	if x.truncated != "" && orig == nil {
		r.st.truncated.Add(1)
	}
	return &Result{Captures: caps, Original: orig, Truncated: rc.truncated}, nil
}

// confirm runs the collision check for a digest match; false means "write a
// full response" (counted and logged).
func (r *Recorder) confirm(ctx context.Context, x *fetched, o *dedupindex.Original) bool {
	n := int64(len(x.resp.payload))
	// A payload length of 0 means unknown (originals imported from CDX
	// lines carry none; empty payloads are never deduplicated).
	if o.PayloadLength != 0 && o.PayloadLength != n {
		r.st.collisions.Add(1)
		r.log.Warn("crawl: digest matches but payload length differs; writing a full response",
			"uri", x.uri, "digest", x.resp.digest, "length", n, "original", o.TargetURI, "original_length", o.PayloadLength)
		return false
	}
	if r.opts.Verify != VerifyBytes {
		return true
	}
	payload, err := r.ReadOriginal(ctx, *o)
	if err != nil {
		r.st.collisions.Add(1)
		r.log.Warn("crawl: cannot re-read the original to verify a digest match; writing a full response",
			"uri", x.uri, "original", o.TargetURI, "file", o.File, "offset", o.Offset, "err", err)
		return false
	}
	if !bytes.Equal(payload, x.resp.payload) {
		r.st.collisions.Add(1)
		r.log.Warn("crawl: digest collision: payload differs byte for byte; writing a full response",
			"uri", x.uri, "digest", x.resp.digest, "original", o.TargetURI, "file", o.File, "offset", o.Offset)
		return false
	}
	return true
}

func angle(id string) string {
	if len(id) > 0 && id[0] == '<' {
		return id
	}
	return "<" + id + ">"
}
