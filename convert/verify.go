package convert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/internal/framescan"
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
	// Framed counts the ARC records a second framing of the ARC file
	// finds (package framescan, which does not use the reader the
	// conversion read with). Disagreements lists where the two readings
	// of the ARC file differ: a record one finds that the other neither
	// finds nor reports as unreadable. NotConverted lists records the
	// second framing finds that the WARC file neither holds nor lists as
	// skipped (with the reason) in its source list.
	Framed        int      `json:"framed"`
	Disagreements []string `json:"disagreements,omitempty"`
	NotConverted  []string `json:"not_converted,omitempty"`
	// Skipped lists the stretches of the ARC file the WARC file's source
	// list says were not converted, with the reason.
	Skipped []string `json:"skipped,omitempty"`
}

// OK reports whether the WARC file holds exactly the ARC file's records.
func (r *Report) OK() bool {
	return r.ARCRecords > 0 && len(r.Missing)+len(r.Extra)+len(r.Damaged)+len(r.Problems)+len(r.Disagreements)+len(r.NotConverted) == 0
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
	var arcRead []framescan.Read
	var arcSpans []warcio.Span
	err := eachRecord(ctx, arcPath, rep, warcio.Options{BlockDigest: true, OnSpan: func(s warcio.Span) {
		if !s.Padding {
			arcSpans = append(arcSpans, s)
		}
	}}, func(rec *warcio.Record) {
		if rec.ARC == nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s offset %d: a WARC record in the ARC file", arcPath, rec.Offset))
			return
		}
		arcEntries = append(arcEntries, Entry{Offset: rec.Offset, Type: arcKind(rec), URI: TargetURI(rec), Date: rec.Date, Digest: rec.PayloadDigest})
		arcRead = append(arcRead, framescan.Read{Key: framescan.Key("", rec.ARC.URL, rec.ARC.Date), Offset: rec.Offset, DataOffset: rec.DataOffset})
	})
	if err != nil {
		return rep, err
	}
	framed, err := framescan.File(arcPath)
	if err != nil {
		return rep, fmt.Errorf("convert: %w", err)
	}
	byKey := map[matchKey][]Entry{}
	infos := 0
	var sources bytes.Buffer
	capture := false
	warcOpts := warcio.Options{BlockDigest: true,
		OnHead: func(rec *warcio.Record) {
			capture = isSourceList(rec)
			if capture {
				sources.Reset()
			}
		},
		Payload: writerFunc(func(p []byte) (int, error) {
			if capture && sources.Len() < 256<<20 {
				sources.Write(p)
			}
			return len(p), nil
		}),
	}
	converted := map[string]int{} // target URI + date of the WARC's records
	err = eachRecord(ctx, warcPath, rep, warcOpts, func(rec *warcio.Record) {
		converted[rec.TargetURI+" "+rec.Date.UTC().Format("20060102150405")]++
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
		case isSourceList(rec):
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
	skipped := skippedSpans(sources.Bytes())
	for _, s := range skipped {
		rep.Skipped = append(rep.Skipped, s.String())
	}
	crossCheck(rep, framed, arcRead, arcSpans, converted, skipped)
	return rep, nil
}

// crossCheck compares the ARC records the second framing finds with the
// records the reader read (and the spans it reported), and with the WARC
// file's records and skipped list.
func crossCheck(rep *Report, framed *framescan.Result, read []framescan.Read, spans []warcio.Span, converted map[string]int, skipped []warcio.Span) {
	rep.Disagreements = append(rep.Disagreements, framescan.Compare(rep.ARC, framed, read, extents(spans))...)
	listed := extents(skipped)
	for _, r := range framed.Records {
		if !r.ARC {
			continue
		}
		rep.Framed++
		uri := strings.NewReplacer(" ", "%20", "\r", "%0D", "\n", "%0A", "\x0c", "%0C", "\x00", "%00").Replace(r.URI)
		if t, ok := warcio.ARCDate(r.Date); ok {
			k := uri + " " + t.Format("20060102150405")
			if converted[k] > 0 {
				converted[k]--
				continue
			}
		}
		if slices.ContainsFunc(listed, func(e framescan.Extent) bool { return e.Covers(r) }) {
			continue // listed as skipped, with its reason
		}
		rep.NotConverted = append(rep.NotConverted, fmt.Sprintf("%s offset %d (uncompressed offset %d) %s %s: not in the WARC file and not listed as skipped", rep.ARC, r.Member, r.DataOffset, r.URI, r.Date))
	}
}

// extents gives spans as framescan takes them.
func extents(spans []warcio.Span) []framescan.Extent {
	out := make([]framescan.Extent, len(spans))
	for i, s := range spans {
		out[i] = framescan.Extent{Offset: s.Offset, Length: s.Length, DataOffset: s.DataOffset, DataLength: s.DataLength}
	}
	return out
}

// isSourceList reports whether rec is the conversion's source list.
func isSourceList(rec *warcio.Record) bool {
	return rec.Type == "metadata" && strings.HasPrefix(strings.ToLower(rec.ContentType), "application/warc-fields") && rec.Header("WARC-Concurrent-To") != ""
}

// skippedSpans reads the arc-skipped lines of a source list.
func skippedSpans(list []byte) []warcio.Span {
	var out []warcio.Span
	for _, line := range strings.Split(string(list), "\n") {
		v, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), skippedField)
		if !ok {
			continue
		}
		if s, ok := parseSkipped(v); ok {
			out = append(out, s)
		}
	}
	return out
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// arcKind names an ARC record for reports.
func arcKind(rec *warcio.Record) string {
	if rec.Type == "warcinfo" {
		return "filedesc"
	}
	return "arc"
}

// eachRecord calls fn for every readable record of a file and lists the
// unreadable ones in rep.Problems.
func eachRecord(ctx context.Context, path string, rep *Report, opts warcio.Options, fn func(*warcio.Record)) error {
	r, err := warcio.Open(path, opts)
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
