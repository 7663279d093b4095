package sidecar_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/internal/framescan"
	"github.com/wayside-archive/wayside/internal/warcgen"
)

// framingRecord is a WARC response record for http://HOST/N, its payload
// unique to the host and N.
func framingRecord(host string, n int) []byte {
	body := framingBody(host, n)
	block := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	return fmt.Appendf(nil, "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:%08x-0000-4000-8000-%012d>\r\nWARC-Target-URI: http://%s/%d\r\nWARC-Date: 2024-05-06T07:08:%02dZ\r\nContent-Type: application/http;msgtype=response\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n",
		len(host), n, host, n, n%60, len(block), block)
}

// framingBody is the payload of framingRecord(host, n).
func framingBody(host string, n int) string {
	return fmt.Sprintf("%s record %d %s", host, n, strings.Repeat("x", 50+n*7%300))
}

// TestE2EOneStreamAndDamagedWatchedOnce runs the real binary watching a
// directory where, across many poll cycles, a WARC compressed as one gzip
// stream grows (sync-flushed between appends, as a writer that keeps one
// stream open leaves it), a damaged WARC grows (bytes that are no gzip
// data between members, a member holding two records with a junk line
// between them), and finished one-stream, multi-record-member and damaged
// files (internal/warcgen) appear. Every append is followed by a wait
// until the daemon's ingest status shows the size written (a poll saw
// it), never by a sleep. At the end, every record the second framing
// (internal/framescan) finds outside damage, alone in its gzip member, is
// in the capture index exactly once (file, URI), nothing else is (records
// sharing a member have no offset and length of their own), and the CDX answer stays
// byte for byte the same over later polls (made visible by marker files
// ingested after them).
func TestE2EOneStreamAndDamagedWatchedOnce(t *testing.T) {
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warcs")
	d := startDaemon(t, dir, ingestTestConfig)
	ctx := context.Background()

	status := func() map[string]api.FileProgress {
		st, err := d.client.Ingest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]api.FileProgress{}
		for _, f := range st.Files {
			m[f.Name] = f
		}
		return m
	}
	// want: file → URI → must be present (true) or may be absent (false,
	// a record damage touched); a URI not listed must not be present.
	want := map[string]map[string]bool{}

	streamPath := filepath.Join(warcs, "stream.warc.gz.open")
	damagedPath := filepath.Join(warcs, "damaged.warc.gz.open")
	sf, err := os.Create(streamPath)
	if err != nil {
		t.Fatal(err)
	}
	df, err := os.Create(damagedPath)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(sf)
	want["stream.warc.gz"], want["damaged.warc.gz"] = map[string]bool{}, map[string]bool{}
	var streamSize, damagedSize int64
	n := 0
	const steps = 8
	for step := range steps {
		for range 3 {
			// One gzip stream: no record is addressable, none indexed.
			zw.Write(framingRecord("stream.example", n))
			n++
		}
		if err := zw.Flush(); err != nil {
			t.Fatal(err)
		}
		var app []byte
		app = append(app, warcgen.Gzip(framingRecord("damaged.example", 3*step))...)
		want["damaged.warc.gz"][fmt.Sprintf("http://damaged.example/%d", 3*step)] = true
		switch step % 3 {
		case 0:
			app = append(app, "not gzip data at all\n"...)
		case 1:
			app = append(app, warcgen.Gzip(append(append(framingRecord("damaged.example", 3*step+1), "junk line in the member\n"...), framingRecord("damaged.example", 3*step+2)...))...)
			// The two share a member: not addressable, not indexed.
		case 2:
			bad := bytes.Replace(framingRecord("damaged.example", 3*step+1), []byte("WARC/1.1"), []byte("WARX/1.1"), 1)
			app = append(app, warcgen.Gzip(bad)...)
			want["damaged.warc.gz"][fmt.Sprintf("http://damaged.example/%d", 3*step+1)] = false
		}
		if _, err := df.Write(app); err != nil {
			t.Fatal(err)
		}
		fi, _ := sf.Stat()
		streamSize = fi.Size()
		fi, _ = df.Stat()
		damagedSize = fi.Size()
		// A finished file of each generated layout, damaged or not.
		rng := rand.New(rand.NewSource(int64(step)))
		layout := []string{"stream", "multi", "member", "plain"}[step%4]
		f := warcgen.Case(rng, false, layout, 4+rng.Intn(6), step%2 == 1)
		name := fmt.Sprintf("gen%d.warc.gz", step)
		if layout == "plain" {
			name = fmt.Sprintf("gen%d.warc", step)
		}
		res, err := framescan.Scan(bytes.NewReader(f.Data), int64(len(f.Data)))
		if err != nil {
			t.Fatal(err)
		}
		scanned, perMember := map[string]bool{}, map[int64]int{}
		for _, r := range res.Records {
			perMember[r.Member]++
		}
		for _, r := range res.Records {
			// A record sharing its gzip member has no offset and length
			// of its own: it is not indexed (as `wayside cdxj` skips it).
			scanned[r.Key()] = !res.Compressed || perMember[r.Member] == 1
		}
		want[name] = map[string]bool{}
		for i, k := range f.Keys {
			uri := fmt.Sprintf("http://example.org/%d", i)
			if ok, found := scanned[k]; found && !ok {
				continue // shares a gzip member: must not be indexed
			}
			want[name][uri] = f.Good[k] && scanned[k]
		}
		writeFile(t, filepath.Join(warcs, name), f.Data)
		waitFor(t, fmt.Sprintf("step %d seen by a poll", step), func() bool {
			m := status()
			return m["stream.warc.gz"].Size == streamSize && m["damaged.warc.gz"].Size == damagedSize && m[name].Done
		})
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	sf.Close()
	df.Close()
	for _, p := range []string{streamPath, damagedPath} {
		if err := os.Rename(p, strings.TrimSuffix(p, ".open")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every file done", func() bool {
		m := status()
		for name := range want {
			if !m[name].Done {
				return false
			}
		}
		return true
	})
	first := cdxAll(t, d)
	checkWatched(t, first, want)
	checkIDReplay(t, d)
	// Later polls add nothing: each marker is ingested by a poll after the
	// one before it, every file looked at again in between.
	for i := range 3 {
		name := fmt.Sprintf("marker%d.warc.gz", i)
		writeFile(t, filepath.Join(warcs, name), warcgen.Gzip(framingRecord(fmt.Sprintf("marker%d.example", i), 0)))
		waitFor(t, name+" done", func() bool { return status()[name].Done })
	}
	again := cdxAll(t, d)
	var kept []string
	for _, l := range strings.Split(again, "\n") {
		if !strings.Contains(l, "marker") {
			kept = append(kept, l)
		}
	}
	if strings.Join(kept, "\n") != first {
		t.Errorf("the CDX answer changed over later polls:\nbefore:\n%s\nafter:\n%s", first, again)
	}
	if err := d.term(); err != nil {
		t.Errorf("SIGTERM exit: %v\n%s", err, d.log())
	}
}

// cdxAll returns the capture index's lines (filename and URL) for every
// capture, sorted.
func cdxAll(t *testing.T, d *daemon) string {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.sock)
	}}
	defer tr.CloseIdleConnections()
	var lines []string
	for _, host := range []string{"example.org", "stream.example", "damaged.example", "marker0.example", "marker1.example", "marker2.example"} {
		resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get("http://wayside/default/cdx?url=" + host + "&matchType=host&output=text&fl=filename,url")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
			t.Fatalf("cdx %s: %s %s", host, resp.Status, b)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" && resp.StatusCode == http.StatusOK {
				lines = append(lines, l)
			}
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// checkIDReplay checks that every capture of the hosts framingRecord
// writes answers id_ with the payload the generator wrote, byte for byte:
// no entry points at another record or at nothing.
func checkIDReplay(t *testing.T, d *daemon) {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.sock)
	}}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) (int, []byte) {
		resp, err := cl.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	checked := 0
	for _, host := range []string{"stream.example", "damaged.example"} {
		code, b := get("http://wayside/default/cdx?url=" + host + "&matchType=host&output=text&fl=timestamp,url")
		if code == http.StatusNotFound {
			continue
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(l)
			if len(f) == 0 {
				continue // no capture of host
			}
			if len(f) != 2 {
				t.Fatalf("cdx %s: line %q", host, l)
			}
			var n int
			if _, err := fmt.Sscanf(f[1], "http://"+host+"/%d", &n); err != nil {
				t.Fatalf("cdx %s: url %q", host, f[1])
			}
			code, body := get("http://wayside/default/" + f[0] + "id_/" + f[1])
			if code != http.StatusOK || string(body) != framingBody(host, n) {
				t.Errorf("id_ %s %s: %d %q, want 200 %q", f[0], f[1], code, body, framingBody(host, n))
			}
			checked++
		}
	}
	if checked == 0 {
		t.Error("no capture of the generated hosts to replay")
	}
}

// checkWatched checks the capture index lines against want: each record
// that must be there exactly once, a damaged one at most once, nothing
// else.
func checkWatched(t *testing.T, cdx string, want map[string]map[string]bool) {
	t.Helper()
	got := map[[2]string]int{}
	for _, l := range strings.Split(cdx, "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			t.Errorf("CDX line %q", l)
			continue
		}
		got[[2]string{f[0], f[1]}]++
		if _, ok := want[f[0]][f[1]]; !ok {
			t.Errorf("capture index holds %s in %s, which the file does not", f[1], f[0])
		}
	}
	for file, uris := range want {
		for uri, must := range uris {
			switch c := got[[2]string{file, uri}]; {
			case c > 1:
				t.Errorf("%s %s in the capture index %d times", file, uri, c)
			case c == 0 && must:
				t.Errorf("%s %s (undamaged) not in the capture index", file, uri)
			}
		}
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := path + ".part"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
