package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/warcio"
)

// Entry is one record as Verify compares it.
type Entry struct {
	Offset int64     `json:"offset"`
	Type   string    `json:"type"`
	URI    string    `json:"uri"`
	Date   time.Time `json:"date"`
	Digest string    `json:"digest"` // computed payload digest
}

func (e Entry) String() string {
	return fmt.Sprintf("offset %d %s %s %s %s", e.Offset, e.Type, e.URI, e.Date.UTC().Format("20060102150405"), e.Digest)
}

// Report is the outcome of Verify.
type Report struct {
	ARC  string `json:"arc"`
	WARC string `json:"warc"`
	// ARCRecords and WARCRecords count the records compared (the WARC's
	// warcinfo and source-list records are not); Matched the ARC records
	// that have their WARC record.
	ARCRecords  int `json:"arc_records"`
	WARCRecords int `json:"warc_records"`
	Matched     int `json:"matched"`
	// Missing lists ARC records without a WARC record of the same target
	// URI, date and payload digest; Extra WARC records that match no ARC
	// record.
	Missing []Entry `json:"missing,omitempty"`
	Extra   []Entry `json:"extra,omitempty"`
	// Damaged lists WARC records whose stored bytes contradict their own
	// WARC-Block-Digest or WARC-Payload-Digest.
	Damaged []string `json:"damaged,omitempty"`
	// Problems lists records of either file that could not be read.
	Problems []string `json:"problems,omitempty"`
}

// OK reports whether the WARC file holds exactly the ARC file's records.
func (r *Report) OK() bool {
	return r.ARCRecords > 0 && len(r.Missing)+len(r.Extra)+len(r.Damaged)+len(r.Problems) == 0
}

type matchKey struct {
	uri, date, digest string
}

func keyOf(e Entry) matchKey {
	return matchKey{e.URI, e.Date.UTC().Format(time.RFC3339Nano), e.Digest}
}

// Verify checks that the WARC file at warcPath holds exactly the records of
// the ARC file at arcPath (see the package documentation). Payload digests
// are computed from the bytes of both files. The error is for failures
// that stop the check (a file that cannot be opened, ctx); what the check
// finds is in the Report.
func Verify(ctx context.Context, arcPath, warcPath string) (*Report, error) {
	rep := &Report{ARC: arcPath, WARC: warcPath}
	var arcEntries []Entry
	err := eachRecord(ctx, arcPath, rep, func(rec *warcio.Record) {
		if rec.ARC == nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s offset %d: a WARC record in the ARC file", arcPath, rec.Offset))
			return
		}
		arcEntries = append(arcEntries, Entry{Offset: rec.Offset, Type: arcKind(rec), URI: TargetURI(rec), Date: rec.Date, Digest: rec.PayloadDigest})
	})
	if err != nil {
		return rep, err
	}
	byKey := map[matchKey][]Entry{}
	infos := 0
	err = eachRecord(ctx, warcPath, rep, func(rec *warcio.Record) {
		if rec.ARC != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s offset %d: an ARC record in the WARC file", warcPath, rec.Offset))
			return
		}
		if rec.DeclaredBlockDigest != "" && rec.BlockDigest != rec.DeclaredBlockDigest {
			rep.Damaged = append(rep.Damaged, fmt.Sprintf("%s offset %d %s: block digest %s, WARC-Block-Digest %s", warcPath, rec.Offset, rec.TargetURI, rec.BlockDigest, rec.DeclaredBlockDigest))
		}
		if c := rec.Capture(""); c.DigestMismatch {
			rep.Damaged = append(rep.Damaged, fmt.Sprintf("%s offset %d %s: payload digest %s, WARC-Payload-Digest %s", warcPath, rec.Offset, rec.TargetURI, rec.PayloadDigest, rec.DeclaredPayloadDigest))
		}
		switch {
		case rec.Type == "warcinfo":
			if infos++; infos == 1 {
				return
			}
		case rec.Type == "metadata" && strings.HasPrefix(strings.ToLower(rec.ContentType), "application/warc-fields") && rec.Header("WARC-Concurrent-To") != "":
			return // the source list
		}
		e := Entry{Offset: rec.Offset, Type: rec.Type, URI: rec.TargetURI, Date: rec.Date, Digest: rec.PayloadDigest}
		rep.WARCRecords++
		byKey[keyOf(e)] = append(byKey[keyOf(e)], e)
	})
	if err != nil {
		return rep, err
	}
	for _, a := range arcEntries {
		rep.ARCRecords++
		k := keyOf(a)
		if ws := byKey[k]; len(ws) > 0 {
			byKey[k] = ws[1:]
			rep.Matched++
			continue
		}
		rep.Missing = append(rep.Missing, a)
	}
	for _, ws := range byKey {
		rep.Extra = append(rep.Extra, ws...)
	}
	sortEntries(rep.Extra)
	return rep, nil
}

// arcKind names an ARC record for reports.
func arcKind(rec *warcio.Record) string {
	if rec.Type == "warcinfo" {
		return "filedesc"
	}
	return "arc"
}

// eachRecord calls fn for every readable record of a file and lists the
// unreadable ones in rep.Problems.
func eachRecord(ctx context.Context, path string, rep *Report, fn func(*warcio.Record)) error {
	r, err := warcio.Open(path, warcio.Options{BlockDigest: true})
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	defer r.Close()
	for n := 0; ; n++ {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		rec, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var we *warcio.Error
			if !errors.As(err, &we) {
				return fmt.Errorf("convert: %w", err)
			}
			rep.Problems = append(rep.Problems, err.Error())
			if errors.Is(err, warcio.ErrTruncated) {
				return nil
			}
			continue
		}
		fn(rec)
	}
}

func sortEntries(es []Entry) {
	sort.Slice(es, func(i, j int) bool { return es[i].Offset < es[j].Offset })
}
