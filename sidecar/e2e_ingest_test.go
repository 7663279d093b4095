package sidecar_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/digest"
)

const ingestTestConfig = `
data_dir: DIR/data
ingest:
  dirs: [DIR/warcs, DIR/heritrix/warcs]
  poll_interval: 20ms
`

// testWARC builds n records (every 5th a revisit of an earlier payload) and
// returns the file bytes and the record boundaries by offset.
func testWARC(n int, seed int) ([]byte, map[int64]warcRec) {
	t0 := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	at := map[int64]warcRec{}
	var bodies [][]byte
	for i := 0; i < n; i++ {
		id := recID(seed*100000 + i)
		uri := fmt.Sprintf("http://site%d.example/p/%d", seed, i)
		date := t0.Add(time.Duration(i) * time.Second)
		var r warcRec
		if i%5 == 4 && len(bodies) > 0 {
			orig := bodies[i%len(bodies)]
			r = warcRec{Type: "revisit", URI: uri, Date: date, ID: id, Digest: "sha1:" + sha1B32(orig), RefURI: "http://elsewhere/", RefDate: t0}
		} else {
			body := []byte(strings.Repeat(fmt.Sprintf("seed %d record %d payload. ", seed, i), 20+i%50))
			bodies = append(bodies, body)
			r = warcRec{Type: "response", URI: uri, Date: date, ID: id, Body: body, Chunked: i%3 == 0}
		}
		at[int64(buf.Len())] = r
		buf.Write(r.bytes())
	}
	return buf.Bytes(), at
}

func readCheckpoint(t *testing.T, dir string) map[string]api.FileProgress {
	t.Helper()
	var cp struct {
		Files map[string]struct {
			Offset      int64 `json:"offset"`
			Records     int64 `json:"records"`
			Done        bool  `json:"done"`
			Truncated   bool  `json:"truncated"`
			TruncatedAt int64 `json:"truncated_at"`
		} `json:"files"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "data", "ingest-checkpoint.json"))
	if err != nil {
		return nil
	}
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatalf("checkpoint is not valid JSON (half-written?): %v\n%s", err, b)
	}
	out := map[string]api.FileProgress{}
	for k, v := range cp.Files {
		out[k] = api.FileProgress{Name: k, Offset: v.Offset, Records: v.Records, Done: v.Done, Truncated: v.Truncated, TruncatedAt: v.TruncatedAt}
	}
	return out
}

// TestE2EIngestGrowingKillRestart appends a WARC in arbitrary chunks to a
// ".open" file while the daemon is killed with SIGKILL and restarted three
// times, then renames it to its final name. Every record must end up in the
// CDXJ exactly once, every original in the index, no revisit in it, and
// the checkpoint must only ever sit on record boundaries.
func TestE2EIngestGrowingKillRestart(t *testing.T) {
	dir := t.TempDir()
	warcs := filepath.Join(dir, "heritrix", "warcs")
	os.MkdirAll(warcs, 0o755)
	data, at := testWARC(1200, 1)
	open := filepath.Join(warcs, "WEB-20240601-00001.warc.gz.open")
	final := strings.TrimSuffix(open, ".open")
	base := filepath.Base(final)

	d := startDaemon(t, dir, ingestTestConfig)
	f, err := os.Create(open)
	if err != nil {
		t.Fatal(err)
	}
	const chunk = 7919 // not aligned with records
	kills := 0
	lastRecords := int64(0)
	boundaries := func(off int64) bool { _, ok := at[off]; return ok || off == int64(len(data)) }
	for pos := 0; pos < len(data); pos += chunk {
		end := min(pos+chunk, len(data))
		if _, err := f.Write(data[pos:end]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
		if cp := readCheckpoint(t, dir); cp != nil {
			if p, ok := cp[base]; ok && !boundaries(p.Offset) {
				t.Fatalf("checkpoint offset %d is not a record boundary", p.Offset)
			}
			if p, ok := cp[base]; ok && p.Offset > int64(end) {
				t.Fatalf("checkpoint offset %d beyond the %d bytes written", p.Offset, end)
			}
		}
		// Kill -9 at three points, each once this incarnation of the daemon
		// has checkpointed progress of its own.
		if kills < 3 && pos > (kills+1)*len(data)/4 {
			waitFor(t, "ingest progress before SIGKILL", func() bool {
				return readCheckpoint(t, dir)[base].Records > lastRecords
			})
			lastRecords = readCheckpoint(t, dir)[base].Records
			t.Logf("SIGKILL with %d of %d bytes written, %d records checkpointed", end, len(data), lastRecords)
			d.kill9()
			kills++
			d.start()
		}
	}
	f.Close()
	// The crawler closes the file: X.warc.gz.open → X.warc.gz.
	if err := os.Rename(open, final); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the renamed file to be done", func() bool {
		st, err := d.client.Ingest(context.Background())
		if err != nil {
			return false
		}
		for _, fp := range st.Files {
			if fp.Name == base && fp.Done && fp.Offset == int64(len(data)) {
				return true
			}
		}
		return false
	})
	if kills != 3 {
		t.Fatalf("killed %d times, want 3", kills)
	}
	cp := readCheckpoint(t, dir)
	if got := cp[base].Records; got != int64(len(at)) {
		t.Errorf("checkpoint counts %d records, want %d (missed or counted twice)", got, len(at))
	}

	// CDXJ: each record exactly once, counted by record id (offset → id).
	cf, err := os.Open(filepath.Join(dir, "data", "cdxj", base+".cdxj"))
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	seen := map[string]int{}
	sc := bufio.NewScanner(cf)
	for sc.Scan() {
		l, err := cdxj.Parse(sc.Text())
		if err != nil {
			t.Fatalf("bad CDXJ line %q: %v", sc.Text(), err)
		}
		r, ok := at[l.Offset]
		if !ok {
			t.Fatalf("CDXJ line at offset %d is not a record start", l.Offset)
		}
		if l.URL != r.URI || l.IsRevisit() != (r.Type == "revisit") {
			t.Errorf("CDXJ line %q does not describe record %s", sc.Text(), r.ID)
		}
		seen[r.ID]++
	}
	for _, r := range at {
		if seen[r.ID] != 1 {
			t.Errorf("record %s in CDXJ %d times, want exactly once", r.ID, seen[r.ID])
		}
	}

	// Index: every original present with its own record id; revisits never.
	ctx := context.Background()
	for _, r := range at {
		if r.Type != "response" {
			continue
		}
		o, found, err := d.client.Lookup(ctx, api.Key{Digest: "sha1:" + sha1B32(r.Body)})
		if err != nil || !found {
			t.Fatalf("original %s not in the index: %v", r.ID, err)
		}
		if o.RecordID != r.ID || o.File != base {
			t.Errorf("digest of %s → %s in %s", r.ID, o.RecordID, o.File)
		}
	}
	// Same-URL key of a revisited URL: nothing (a revisit is no original).
	for _, r := range at {
		if r.Type != "revisit" {
			continue
		}
		if _, found, _ := d.client.Lookup(ctx, api.Key{Digest: r.Digest, TargetURI: r.URI}); found {
			t.Errorf("revisit %s of %s was indexed as an original", r.ID, r.URI)
		}
		break
	}
	// The live MementoMap knows every captured URI (after three kill -9s:
	// what was not merged was fed again from the CDXJ).
	for _, r := range at {
		m, err := d.client.MapLookup(ctx, r.URI)
		if err != nil || !m.Found {
			t.Fatalf("MementoMap lookup %s: %+v %v", r.URI, m, err)
		}
	}
	if m, err := d.client.MapLookup(ctx, "http://never-crawled.example/"); err != nil || m.Found {
		t.Errorf("MementoMap lookup of an uncaptured host: %+v %v", m, err)
	}
	res, err := d.client.CompactMap(ctx)
	if err != nil || !res.Merged || res.Lines < 2 {
		t.Errorf("merge: %+v %v", res, err)
	}
	body, err := d.client.MementoMap(ctx)
	if err != nil || !strings.Contains(body, "example,site1)/p/7 ") {
		t.Errorf("map body lacks a captured key: %v\n%.500s", err, body)
	}
	resp := httpGetRawUnix(t, d.sock, "/healthz")
	if l := resp.Header.Get("Link"); !strings.Contains(l, `rel="mementomap"`) {
		t.Errorf("Link header %q does not announce the MementoMap", l)
	}
	// The capture index holds every record exactly once (after three
	// kill -9s: what it had not written was caught up from the CDXJ).
	checkCaptureIndex(t, d, "site1.example", at)
	if err := d.term(); err != nil {
		t.Errorf("SIGTERM exit: %v\n%s", err, d.log())
	}
}

// TestE2EIngestTruncatedTail: a finished WARC that ends inside a record is
// reported (status and metrics) with the offset of the partial record, and
// its complete records are indexed.
func TestE2EIngestTruncatedTail(t *testing.T) {
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warcs")
	os.MkdirAll(warcs, 0o755)
	data, at := testWARC(10, 2)
	var offs []int64
	for o := range at {
		offs = append(offs, o)
	}
	last := int64(0)
	for _, o := range offs {
		last = max(last, o)
	}
	cut := last + (int64(len(data))-last)/2
	os.WriteFile(filepath.Join(warcs, "cut.warc.gz"), data[:cut], 0o644)
	d := startDaemon(t, dir, ingestTestConfig)
	var fp api.FileProgress
	waitFor(t, "truncation report", func() bool {
		st, err := d.client.Ingest(context.Background())
		if err != nil || len(st.Files) != 1 {
			return false
		}
		fp = st.Files[0]
		return fp.Truncated
	})
	if fp.TruncatedAt != last || fp.Offset != last || fp.Records != 9 {
		t.Errorf("truncated at %d offset %d records %d, want %d %d 9", fp.TruncatedAt, fp.Offset, fp.Records, last, last)
	}
	m, err := d.client.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m, "wayside_ingest_truncated_files_total 1\n") {
		t.Errorf("metrics do not report the truncated file:\n%s", m)
	}
	// `wayside status` shows it to the operator.
	out, err := exec.Command(waysideBin, "status", "-addr", d.sock, "ingest").CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("TRUNCATED at %d", last)) {
		t.Errorf("wayside status ingest: %v\n%s", err, out)
	}
	// The crawler finishes writing after all: the record is picked up.
	fh, _ := os.OpenFile(filepath.Join(warcs, "cut.warc.gz"), os.O_WRONLY|os.O_APPEND, 0)
	fh.Write(data[cut:])
	fh.Close()
	waitFor(t, "the completed record", func() bool {
		st, err := d.client.Ingest(context.Background())
		return err == nil && len(st.Files) == 1 && st.Files[0].Records == 10 && !st.Files[0].Truncated && st.Files[0].Done
	})
	dg, _ := digest.Normalize("sha1:" + sha1B32(at[0].Body))
	if _, found, err := d.client.Lookup(context.Background(), api.Key{Digest: dg}); err != nil || !found {
		t.Errorf("first original missing: %v", err)
	}
	out, err = exec.Command(waysideBin, "status", "-addr", d.sock, "lookup", dg).CombinedOutput()
	if err != nil || !strings.Contains(string(out), at[0].ID) || !strings.Contains(string(out), "cut.warc.gz offset 0") {
		t.Errorf("wayside status lookup: %v\n%s", err, out)
	}
	out, err = exec.Command(waysideBin, "status", "-addr", d.sock).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ingest:     1 files, 10 records") {
		t.Errorf("wayside status: %v\n%s", err, out)
	}
}

// TestE2ESIGTERMDuringIngest: SIGTERM while a large WARC is being ingested
// exits cleanly (status 0) with the checkpoint and the CDXJ agreeing; the
// restarted daemon finishes the file with every record exactly once.
func TestE2ESIGTERMDuringIngest(t *testing.T) {
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warcs")
	os.MkdirAll(warcs, 0o755)
	data, at := testWARC(8000, 3)
	d := startDaemon(t, dir, ingestTestConfig)
	if err := os.WriteFile(filepath.Join(warcs, "big.warc.gz"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ingest to start", func() bool {
		st, err := d.client.Ingest(context.Background())
		return err == nil && st.Records > 0
	})
	if err := d.term(); err != nil {
		t.Fatalf("SIGTERM during ingest: exit %v\n%s", err, d.log())
	}
	cp := readCheckpoint(t, dir)["big.warc.gz"]
	if _, ok := at[cp.Offset]; !ok && cp.Offset != int64(len(data)) {
		t.Fatalf("checkpoint offset %d is not a record boundary", cp.Offset)
	}
	cdxjLines := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "data", "cdxj", "big.warc.gz.cdxj"))
		return strings.Count(string(b), "\n")
	}
	if got := cdxjLines(); int64(got) != cp.Records {
		t.Errorf("after SIGTERM: %d CDXJ lines, checkpoint says %d records", got, cp.Records)
	}
	t.Logf("stopped at %d of %d records", cp.Records, len(at))
	d.start()
	waitFor(t, "the rest of the file", func() bool {
		st, err := d.client.Ingest(context.Background())
		return err == nil && len(st.Files) == 1 && st.Files[0].Done && st.Files[0].Offset == int64(len(data))
	})
	if got := cdxjLines(); got != len(at) {
		t.Errorf("after restart: %d CDXJ lines for %d records", got, len(at))
	}
	if got := readCheckpoint(t, dir)["big.warc.gz"].Records; got != int64(len(at)) {
		t.Errorf("checkpoint counts %d records, want %d", got, len(at))
	}
}
