package postdedup

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

// testRecord is a response (or revisit) record to write into a test WARC.
type testRecord struct {
	version  string
	typ      string
	id       string
	uri      string
	date     time.Time
	payload  []byte
	declared string // WARC-Payload-Digest; "" = SHA-1 of the payload
	extra    []warcio.Field
}

// writeWARC writes records, one gzip member each, with the crawler's
// encoder, and returns each record's offset.
func writeWARC(t *testing.T, path string, recs []testRecord, tail []byte) []int64 {
	t.Helper()
	var out bytes.Buffer
	var offs []int64
	for _, r := range recs {
		if r.version == "" {
			r.version = "1.1"
		}
		if r.typ == "" {
			r.typ = "response"
		}
		head := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", len(r.payload))
		block := append([]byte(head), r.payload...)
		d := r.declared
		if d == "" {
			d = digest.Of(digest.SHA1, r.payload).String()
		}
		rec := &warcio.Draft{Type: r.typ, ID: r.id, DateText: r.date.UTC().Format(time.RFC3339), Block: block,
			Fields: append([]warcio.Field{{Name: "WARC-Target-URI", Value: r.uri}, {Name: "Content-Type", Value: "application/http; msgtype=response"},
				{Name: "WARC-Payload-Digest", Value: d}}, r.extra...)}
		if r.typ == "revisit" {
			rec.Block = []byte(head)
		}
		var plain bytes.Buffer
		rec.Marshal(&plain, r.version)
		offs = append(offs, int64(out.Len()))
		zw := gzip.NewWriter(&out)
		zw.Write(plain.Bytes())
		zw.Close()
	}
	out.Write(tail)
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return offs
}

var t0 = time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)

func id(n int) string { return fmt.Sprintf("<urn:uuid:00000000-0000-4000-8000-%012d>", n) }

// TestForcedCollision: two different payloads with the same declared
// digest (a real MD5 collision, checked below) land in one cluster; the
// byte comparison keeps both in full, and later copies of each become
// revisits of their own payload's earliest capture.
func TestForcedCollision(t *testing.T) {
	a, _ := hex.DecodeString("d131dd02c5e6eec4693d9a0698aff95c2fcab58712467eab4004583eb8fb7f8955ad340609f4b30283e488832571415a085125e8f7cdc99fd91dbdf280373c5bd8823e3156348f5bae6dacd436c919c6dd53e2b487da03fd02396306d248cda0e99f33420f577ee8ce54b67080a80d1ec69821bcb6a8839396f9652b6ff72a70")
	b, _ := hex.DecodeString("d131dd02c5e6eec4693d9a0698aff95c2fcab50712467eab4004583eb8fb7f8955ad340609f4b30283e4888325f1415a085125e8f7cdc99fd91dbd7280373c5bd8823e3156348f5bae6dacd436c919c6dd53e23487da03fd02396306d248cda0e99f33420f577ee8ce54b67080280d1ec69821bcb6a8839396f965ab6ff72a70")
	if bytes.Equal(a, b) || md5.Sum(a) != md5.Sum(b) {
		t.Fatal("the test payloads are not an MD5 collision")
	}
	md := digest.Of(digest.MD5, a).String()
	for _, mode := range []string{SourceHeader, SourceCompute} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "in", "c.warc.gz")
			os.MkdirAll(filepath.Dir(in), 0o755)
			offs := writeWARC(t, in, []testRecord{
				{id: id(1), uri: "http://a.example/1", date: t0, payload: a, declared: md},
				{id: id(2), uri: "http://b.example/1", date: t0.Add(time.Hour), payload: b, declared: md},
				{id: id(3), uri: "http://a.example/2", date: t0.Add(2 * time.Hour), payload: a, declared: md},
				{id: id(4), uri: "http://b.example/2", date: t0.Add(3 * time.Hour), payload: b, declared: md},
			}, nil)
			opts := RunOptions{Resolve: ResolveOptions{Policy: Policy{MinPayloadSize: 1}}}
			if mode == SourceCompute {
				opts.Manifest = ManifestOptions{Source: SourceCompute, Alg: "md5"}
			}
			for _, cache := range []int64{-1, 0} { // resolve's re-read, and the scan's comparison
				opts.Manifest.CompareCache = cache
				out := filepath.Join(dir, fmt.Sprint("out", cache))
				rep := runAll(t, []string{in}, out, opts)
				if rep.Resolve.Clusters != 1 || rep.Resolve.Collisions != 1 || rep.Resolve.Duplicates != 2 {
					t.Fatalf("cache %d: %d clusters, %d collisions, %d copies; want 1, 1, 2", cache, rep.Resolve.Clusters, rep.Resolve.Collisions, rep.Resolve.Duplicates)
				}
				if l := rep.Resolve.CollisionList; len(l) != 1 || l[0].Offset != offs[1] {
					t.Errorf("collision list %v, want the record at %d", l, offs[1])
				}
				recs := readAllRecords(t, filepath.Join(out, "c.warc.gz"), warcioOpts())
				want := []struct{ typ, refers string }{{"response", ""}, {"response", ""}, {"revisit", id(1)}, {"revisit", id(2)}}
				for i, r := range recs {
					if r.Type != want[i].typ || r.Header("WARC-Refers-To") != want[i].refers {
						t.Errorf("record %d: %s referring to %q, want %s referring to %q", i, r.Type, r.Header("WARC-Refers-To"), want[i].typ, want[i].refers)
					}
				}
				if !bytes.Equal(recs[0].Payload, a) || !bytes.Equal(recs[1].Payload, b) {
					t.Error("the colliding payloads are not both kept in full")
				}
			}
		})
	}
}

// TestBadInput: damaged and unusual records are reported by file and
// offset and never become (or point at) an unverified original.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in", "bad.warc.gz")
	os.MkdirAll(filepath.Dir(in), 0o755)
	p := bytes.Repeat([]byte("payload P "), 300)
	damaged := append(bytes.Clone(p[:len(p)-1]), '!')
	q := bytes.Repeat([]byte("payload Q "), 300)
	// A cut gzip member at the end (a crawler killed mid-write).
	var cut bytes.Buffer
	zw := gzip.NewWriter(&cut)
	zw.Write([]byte("WARC/1.1\r\nWARC-Type: response\r\nContent-Length: 5000\r\n\r\n" + strings.Repeat("x", 3000)))
	zw.Close()
	tail := cut.Bytes()[:cut.Len()/2]
	recs := []testRecord{
		{id: id(1), uri: "http://x.example/damaged", date: t0, payload: damaged, declared: digest.Of(digest.SHA1, p).String()},
		{id: id(2), uri: "http://x.example/p", date: t0.Add(time.Minute), payload: p},
		{id: id(3), uri: "http://x.example/p-old", date: t0.Add(2 * time.Minute), payload: p, version: "0.17"},
		{id: id(4), uri: "http://x.example/q", date: t0.Add(3 * time.Minute), payload: q},
		{id: id(5), uri: "http://x.example/q2", date: t0.Add(4 * time.Minute), payload: q},
		// A revisit already in the input, referring to record 5: record 5
		// must stay a full copy although it is a later copy of record 4.
		{id: id(6), typ: "revisit", uri: "http://x.example/q2", date: t0.Add(5 * time.Minute), payload: q,
			extra: []warcio.Field{{Name: "WARC-Profile", Value: warcio.ProfileIdenticalPayloadDigest11}, {Name: "WARC-Refers-To", Value: id(5)}}},
		{id: id(7), uri: "http://x.example/p2", date: t0.Add(6 * time.Minute), payload: p},
	}
	offs := writeWARC(t, in, recs, tail)
	before := sha256File(t, in)
	rep := runAll(t, []string{in}, filepath.Join(dir, "out"), RunOptions{})
	if sha256File(t, in) != before {
		t.Fatal("the input changed")
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Offset != offs[len(offs)-1]+int64(0) && rep.Problems[0].Offset < offs[len(offs)-1] {
		t.Errorf("unreadable records %v, want the cut member after offset %d", rep.Problems, offs[len(offs)-1])
	}
	bad := map[int64]string{}
	for _, b := range rep.Resolve.BadInput {
		bad[b.Offset] = b.Message
	}
	for i, code := range map[int]string{0: codeMismatch, 2: codeVersion, 5: codeRevisit} {
		if !strings.HasPrefix(bad[offs[i]], code+":") {
			t.Errorf("record %d at %d: reported %q, want %s", i+1, offs[i], bad[offs[i]], code)
		}
	}
	if rep.Resolve.Pinned != 1 || rep.Resolve.Duplicates != 1 {
		t.Errorf("%d pinned, %d copies rewritten; want record 5 pinned and only record 7 rewritten", rep.Resolve.Pinned, rep.Resolve.Duplicates)
	}
	out := readUntilTruncated(t, filepath.Join(dir, "out", "bad.warc.gz"))
	if len(out) != len(recs) {
		t.Fatalf("%d records in the output, want %d", len(out), len(recs))
	}
	for i, r := range out {
		want := "response"
		if i == 5 || i == 6 {
			want = "revisit"
		}
		if r.Type != want {
			t.Errorf("output record %d is a %s, want %s", i+1, r.Type, want)
		}
	}
	if r := out[6]; r.Header("WARC-Refers-To") != id(2) {
		t.Errorf("record 7 refers to %s, want the verified original %s (not the damaged record 1)", r.Header("WARC-Refers-To"), id(2))
	}
}

// TestCorpus runs the pipeline over the real-world corpus: everything
// validates (deep), nothing in the inputs changes.
func TestCorpus(t *testing.T) {
	files := testenv.CorpusWARCs(t)
	dir := t.TempDir()
	in := copyInputs(t, filepath.Join(dir, "in"), files...)
	sums := map[string]string{}
	for _, f := range in {
		sums[f] = sha256File(t, f)
	}
	rep := runAll(t, in, filepath.Join(dir, "out"), RunOptions{Resolve: ResolveOptions{Policy: Policy{MinPayloadSize: 1, Statuses: allStatuses}}})
	for _, f := range in {
		if sha256File(t, f) != sums[f] {
			t.Errorf("%s changed", f)
		}
	}
	if rep.Validate.Files != len(files) || rep.Validate.Records != rep.Validate.InputRecords {
		t.Errorf("validated %d files, %d of %d records", rep.Validate.Files, rep.Validate.Records, rep.Validate.InputRecords)
	}
	if rep.Resolve.Kept[codeRevisit] == 0 {
		t.Error("the corpus's revisits were not recognised")
	}
	t.Logf("corpus: %d records, %d rewritten, %d pinned, %d bad-input notes, %d unreadable; %d → %d bytes",
		rep.Validate.InputRecords, rep.Rewrite.Revisits, rep.Resolve.Pinned, len(rep.Resolve.BadInput), len(rep.Problems), rep.InputBytes, rep.OutputBytes)
	_ = context.Background
}
