package interop_test

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/warcio"
)

// outputSet is what one Wayside command wrote: the WARC files, the CDXJ
// files it left beside them (closed ones), and for commands that copy
// records of their inputs (dedup run), those inputs.
type outputSet struct {
	name   string
	warcs  []string
	cdxjs  []string
	inputs []string
	// wantRevisits is the least number of revisits Wayside must have
	// written in the set (so the revisit checks cannot pass on none).
	wantRevisits int
}

// checkSet runs every third-party check on a set.
func checkSet(t testing.TB, js jsTools, set outputSet) {
	t.Helper()
	recs := js.warcioRecords(t, append(slices.Clone(set.warcs), set.inputs...))
	if t.Failed() {
		t.FailNow()
	}
	copied := checkRecords(t, set, recs)
	written := checkRevisitRefs(t, set, recs, copied)
	if len(written) < set.wantRevisits {
		t.Errorf("%s: %d revisits written by Wayside, want at least %d", set.name, len(written), set.wantRevisits)
	}
	n := 0
	for _, p := range set.warcs {
		n += len(recs[p])
	}
	t.Logf("%s: %d files, %d records read by warcio.js, %d copied from inputs, %d revisits written by Wayside", set.name, len(set.warcs), n, len(copied), len(written))
	checkReplay(t, js, set, written)
	checkCDXJ(t, js, set, recs)
}

// wrec is a record as Wayside's own reader sees it.
type wrec struct {
	*warcio.Record
	file string
}

func readWayside(t testing.TB, path string) []wrec {
	t.Helper()
	r, err := warcio.Open(path, warcio.Options{BlockDigest: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []wrec
	for n := 0; n < 1_000_000; n++ {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Errorf("Wayside's reader: %v", err)
			return out
		}
		out = append(out, wrec{rec, filepath.Base(path)})
	}
	t.Fatalf("%s: more than a million records", path)
	return nil
}

// hexOf returns the hex value and algorithm of a WARC digest header, or ""
// when it does not parse.
func hexOf(s string) (alg, hx string) {
	d, err := digest.Parse(s)
	if err != nil {
		return "", ""
	}
	return d.Alg, d.Hex()
}

// checkRecords compares warcio.js's reading of every output file with
// Wayside's reader (record count, offsets, stored lengths, type, target
// URI, record ID) and checks the digests warcio.js computes against the
// declared ones. Records copied from an input (same WARC-Record-ID and
// type) must read in warcio.js exactly as the input record does; every
// other record was written by Wayside and its declared digests must hold.
// It returns the IDs of the copied records.
func checkRecords(t testing.TB, set outputSet, recs map[string][]jsRecord) map[string]bool {
	t.Helper()
	// Input records by file name and record ID, in order: some writers
	// (wget) give several records one ID.
	inputs := map[string][]*jsRecord{}
	for _, in := range set.inputs {
		for i := range recs[in] {
			r := &recs[in][i]
			k := filepath.Base(in) + " " + r.h("WARC-Record-ID")
			inputs[k] = append(inputs[k], r)
		}
	}
	copied := map[string]bool{}
	total := 0
	for _, path := range set.warcs {
		js := recs[path]
		ws := readWayside(t, path)
		if len(js) != len(ws) {
			t.Errorf("%s: warcio.js reads %d records, Wayside's reader %d", path, len(js), len(ws))
			continue
		}
		total += len(js)
		for i := range js {
			j, w := &js[i], ws[i]
			where := fmt.Sprintf("%s offset %d", path, w.Offset)
			if j.Offset != w.Offset || (j.Length != w.Length && !trailingBlankLines(path, j, w)) {
				t.Errorf("%s: warcio.js places record %d at offset %d length %d, Wayside at offset %d length %d", path, i, j.Offset, j.Length, w.Offset, w.Length)
			}
			if got := strings.ToLower(j.h("WARC-Type")); got != w.Type {
				t.Errorf("%s: warcio.js reads type %q, Wayside %q", where, got, w.Type)
			}
			if got := strings.Trim(j.h("WARC-Target-URI"), "<>"); got != w.TargetURI {
				t.Errorf("%s: warcio.js reads target URI %q, Wayside %q", where, got, w.TargetURI)
			}
			if j.h("WARC-Record-ID") != w.RecordID {
				t.Errorf("%s: warcio.js reads record ID %q, Wayside %q", where, j.h("WARC-Record-ID"), w.RecordID)
			}
			k := filepath.Base(path) + " " + w.RecordID
			if ins := inputs[k]; len(ins) > 0 && strings.EqualFold(ins[0].h("WARC-Type"), j.h("WARC-Type")) {
				inputs[k] = ins[1:]
				copied[w.RecordID] = true
				checkCopied(t, where, j, ins[0])
				continue
			}
			checkDigests(t, where, j, w)
		}
	}
	if total == 0 {
		t.Errorf("%s: no records", set.name)
	}
	return copied
}

// trailingBlankLines reports whether Wayside's record length exceeds
// warcio.js's by exactly the CRLF CRLF ending a record of an uncompressed
// file: warcio.Record.Length counts it there (documented), warcio.js
// does not. (The CDXJ length is checked separately: see cdxjDiff.)
func trailingBlankLines(path string, j *jsRecord, w wrec) bool {
	if strings.HasSuffix(path, ".gz") || w.Length != j.Length+4 {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 4)
	_, err = f.ReadAt(b, j.Offset+j.Length)
	return err == nil && string(b) == "\r\n\r\n"
}

// checkCopied checks that warcio.js reads a copied record as it reads the
// input record: same headers, same block and payload bytes.
func checkCopied(t testing.TB, where string, out, in *jsRecord) {
	t.Helper()
	for k, v := range in.Headers {
		if out.Headers[k] != v {
			t.Errorf("%s: copied record's %s is %q, the input's %q", where, k, out.Headers[k], v)
		}
	}
	if out.Block["sha256"] != in.Block["sha256"] || out.Payload["sha256"] != in.Payload["sha256"] || out.Status != in.Status {
		t.Errorf("%s: warcio.js reads other bytes in the copied record than in its input (block %s vs %s, payload %s vs %s)", where, out.Block["sha256"], in.Block["sha256"], out.Payload["sha256"], in.Payload["sha256"])
	}
}

// checkDigests checks a record Wayside wrote: the block and payload digests
// warcio.js computes equal the declared ones, and Wayside's capture carries
// the same payload digest with no mismatch.
func checkDigests(t testing.TB, where string, j *jsRecord, w wrec) {
	t.Helper()
	if d := j.h("WARC-Block-Digest"); d != "" {
		alg, want := hexOf(d)
		if got := j.Block[alg]; got == "" || got != want {
			t.Errorf("%s: warcio.js computes block %s %s, the record declares %s", where, alg, got, d)
		}
	} else if w.Type != "warcinfo" {
		t.Errorf("%s: %s record without WARC-Block-Digest", where, w.Type)
	}
	d := j.h("WARC-Payload-Digest")
	switch {
	case w.Type == "revisit":
		return // the original's digest: checked with the original
	case d == "" && (w.Type == "response" || w.Type == "resource"):
		t.Errorf("%s: %s record without WARC-Payload-Digest", where, w.Type)
		return
	case d == "":
		return
	}
	alg, want := hexOf(d)
	if got := j.Payload[alg]; got == "" || got != want {
		t.Errorf("%s: warcio.js computes payload %s %s over %d bytes (chunked %v), the record declares %s", where, alg, got, j.PayloadLen, j.Chunked, d)
	}
	c := w.Capture(w.file)
	if c.DigestMismatch {
		t.Errorf("%s: Wayside flags its own record's payload digest as mismatched", where)
	}
	if norm, err := digest.Normalize(d); err != nil || c.Digest != norm {
		t.Errorf("%s: Wayside's capture digest %q, warcio.js reads %q", where, c.Digest, d)
	}
}

// revisitRef is a revisit record Wayside wrote, with the record it names.
type revisitRef struct {
	where    string
	revisit  *jsRecord
	original *jsRecord
}

// checkRevisitRefs checks, for every revisit Wayside wrote in the set,
// that its WARC-Refers-To-Target-URI, WARC-Refers-To-Date and
// WARC-Payload-Digest name a response or resource record of the set (as
// warcio.js reads them) with that digest, borne out by the payload bytes;
// and that WARC-Refers-To, when present, is that record's ID. It returns
// the revisits.
func checkRevisitRefs(t testing.TB, set outputSet, recs map[string][]jsRecord, copied map[string]bool) []revisitRef {
	t.Helper()
	type key struct{ uri, date string }
	originals := map[key][]*jsRecord{}
	for _, path := range set.warcs {
		for i := range recs[path] {
			r := &recs[path][i]
			if typ := strings.ToLower(r.h("WARC-Type")); typ == "response" || typ == "resource" {
				k := key{strings.Trim(r.h("WARC-Target-URI"), "<>"), r.h("WARC-Date")}
				originals[k] = append(originals[k], r)
			}
		}
	}
	var out []revisitRef
	for _, path := range set.warcs {
		for i := range recs[path] {
			r := &recs[path][i]
			if !strings.EqualFold(r.h("WARC-Type"), "revisit") || copied[r.h("WARC-Record-ID")] {
				continue
			}
			where := fmt.Sprintf("%s offset %d (revisit of %s)", path, r.Offset, r.h("WARC-Target-URI"))
			uri, date := strings.Trim(r.h("WARC-Refers-To-Target-URI"), "<>"), r.h("WARC-Refers-To-Date")
			if uri == "" || date == "" || r.h("WARC-Payload-Digest") == "" || r.h("WARC-Profile") == "" {
				t.Errorf("%s: lacks WARC-Refers-To-Target-URI, WARC-Refers-To-Date, WARC-Payload-Digest or WARC-Profile: %v", where, r.Headers)
				continue
			}
			alg, want := hexOf(r.h("WARC-Payload-Digest"))
			var found *jsRecord
			for _, o := range originals[key{uri, date}] {
				if oalg, ohex := hexOf(o.h("WARC-Payload-Digest")); oalg == alg && ohex == want && o.Payload[alg] == want {
					found = o
				}
			}
			if found == nil {
				t.Errorf("%s: no response or resource record of %s at %s with payload digest %s in the set", where, uri, date, r.h("WARC-Payload-Digest"))
				continue
			}
			if id := r.h("WARC-Refers-To"); id != "" && id != found.h("WARC-Record-ID") {
				t.Errorf("%s: WARC-Refers-To %s, but the record it names by URI and date is %s", where, id, found.h("WARC-Record-ID"))
			}
			out = append(out, revisitRef{where: where, revisit: r, original: found})
		}
	}
	return out
}

// checkReplay loads the set into wabac.js (ReplayWeb.page's replay engine)
// and checks that every revisit Wayside wrote resolves as a replay resolves
// it: wabac.js indexes it as a revisit of its original's URL and date, its
// lookup of that URL and date finds the original (not another capture),
// and replaying the revisit's own URL and time serves the original's
// status and the payload bytes the revisit's digest names.
func checkReplay(t testing.TB, js jsTools, set outputSet, written []revisitRef) {
	t.Helper()
	if len(written) == 0 {
		return
	}
	type key struct {
		url string
		ts  int64
	}
	got := map[key]wabacResult{}
	for _, r := range js.wabacRevisits(t, set.warcs) {
		got[key{r.URL, r.TS}] = r
	}
	for _, ref := range written {
		uri, _, _ := strings.Cut(strings.Trim(ref.revisit.h("WARC-Target-URI"), "<>"), "#")
		ts, ok := warcio.ParseDate(ref.revisit.h("WARC-Date"))
		origTS, ok2 := warcio.ParseDate(ref.revisit.h("WARC-Refers-To-Date"))
		if !ok || !ok2 {
			t.Errorf("%s: WARC-Date or WARC-Refers-To-Date does not parse", ref.where)
			continue
		}
		r, ok := got[key{uri, ts.UnixMilli()}]
		switch {
		case !ok:
			t.Errorf("%s: wabac.js did not index it as a revisit", ref.where)
			continue
		case r.Original == nil || r.Original.Revisit:
			t.Errorf("%s: wabac.js's lookup of %s at %d finds no original", ref.where, r.OrigURL, r.OrigTS)
			continue
		case r.Original.URL != strings.Trim(ref.original.h("WARC-Target-URI"), "<>") || r.Original.TS != origTS.UnixMilli():
			t.Errorf("%s: wabac.js resolves it to %s at %d, not to its original at %s", ref.where, r.Original.URL, r.Original.TS, ref.revisit.h("WARC-Refers-To-Date"))
		case r.Replay == nil || r.OriginalReplay == nil:
			t.Errorf("%s: wabac.js replays nothing for it (%v) or for its original (%v)", ref.where, r.Replay, r.OriginalReplay)
			continue
		}
		status := ref.original.Status
		if !ref.original.HTTP {
			status = 200 // wabac.js serves a resource record as a 200
		}
		if *r.Replay != *r.OriginalReplay || r.Replay.Status != status || r.Replay.URL != r.Original.URL {
			t.Errorf("%s: wabac.js replays it as %+v, its original (status %d) as %+v", ref.where, *r.Replay, status, *r.OriginalReplay)
		}
	}
}

// hexDigest is the hex form of a CDXJ digest field.
func hexDigest(s string) string {
	if d, err := digest.Parse(s); err == nil {
		return d.Alg + ":" + hex.EncodeToString(d.Sum)
	}
	return s
}

// readLines returns the lines of a file.
func readLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func parseLines(t testing.TB, name string, lines []string) []cdxj.Line {
	t.Helper()
	out := make([]cdxj.Line, 0, len(lines))
	for i, s := range lines {
		l, err := cdxj.Parse(s)
		if err != nil {
			t.Errorf("%s line %d: %v", name, i+1, err)
			continue
		}
		out = append(out, l)
	}
	return out
}
