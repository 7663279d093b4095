package replay

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/digest"
)

// manyCaptures fills an index with n captures of one URL (one a minute)
// and n/10 of other URLs of the host.
func manyCaptures(t testing.TB, n int) *captureindex.Index {
	t.Helper()
	ctx := context.Background()
	ix, err := captureindex.Open(filepath.Join(t.TempDir(), "ci"), captureindex.WithSyncInterval(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	var batch []wayside.Capture
	add := func(c wayside.Capture) {
		batch = append(batch, c)
		if len(batch) == 4096 {
			if _, err := ix.Add(ctx, batch...); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	for i := range n + n/10 {
		uri := "http://big.example.com/page"
		if i >= n {
			uri = fmt.Sprintf("http://big.example.com/other/%d", i)
		}
		add(wayside.Capture{URI: uri, Date: t0.Add(time.Duration(i) * time.Minute), Type: "response", Status: 200, MIME: "text/html",
			Digest: digest.Of(digest.SHA1, []byte(fmt.Sprint(i))).String(), File: fmt.Sprintf("big-%03d.warc.gz", i/5000),
			Offset: int64(i%5000) * 4000, Length: 3999, PayloadLength: 10000})
	}
	if _, err := ix.Add(ctx, batch...); err != nil {
		t.Fatal(err)
	}
	return ix
}

// liveHeapProbe is a ResponseWriter that discards the body but, once half
// of want bytes went through, measures the live heap (after a full
// collection): what the handler holds while it streams.
type liveHeapProbe struct {
	*httptest.ResponseRecorder
	want, n   int
	lines     int
	base, mid uint64
}

func (p *liveHeapProbe) Write(b []byte) (int, error) {
	if p.n < p.want/2 && p.n+len(b) >= p.want/2 {
		p.mid = liveHeap()
	}
	p.n += len(b)
	p.lines += bytes.Count(b, []byte("\n"))
	return len(b), nil
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestHugeResultsStream asks for far more captures than fit in a small
// amount of memory: the CDX API answers at most MaxResults lines, a
// TimeMap one page, and halfway through either answer the handler holds
// almost nothing of it (the live heap has not grown by more than a
// fraction of what was sent).
func TestHugeResultsStream(t *testing.T) {
	const n = 60000
	ix := manyCaptures(t, n)
	h, err := New(Options{Index: ix, MaxResults: 50000, PageSize: 20000})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path      string
		lines     int
		minBytes  int
		wantStart string
	}{
		{"/default/cdx?url=big.example.com/page&output=json&limit=1000000", 50000, 10 << 20, `{"urlkey": "com,example,big)/page"`},
		{"/default/cdx?url=big.example.com&matchType=domain&output=cdxj", 50000, 8 << 20, "com,example,big)/other/"},
		{"/default/cdx?url=big.example.com/page&sort=reverse&output=text", 50000, 5 << 20, "com,example,big)/page 2020"},
		{"/default/timemap/link/http://big.example.com/page", 20000 + 4, 2 << 20, "<http://archive.test/default/timemap/link/"},
	} {
		// A first pass sizes the answer; the second measures.
		rr := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "http://archive.test"+tc.path, nil)
		if err := h.Serve(rr, req, ""); err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		body := rr.Body.String()
		if rr.Code != 200 || strings.Count(body, "\n") != tc.lines || len(body) < tc.minBytes || !strings.HasPrefix(body, tc.wantStart) {
			t.Fatalf("%s: status %d, %d lines, %d bytes, starts %.80q", tc.path, rr.Code, strings.Count(body, "\n"), len(body), body)
		}
		size := len(body)
		rr, body = nil, ""
		p := &liveHeapProbe{ResponseRecorder: httptest.NewRecorder(), want: size}
		p.base = liveHeap()
		if err := h.Serve(p, req, ""); err != nil {
			t.Fatal(err)
		}
		grown := int64(p.mid) - int64(p.base)
		t.Logf("%s: %d bytes sent, live heap %+d bytes halfway", tc.path, size, grown)
		if grown > int64(size)/4 {
			t.Errorf("%s: the live heap grew by %d bytes halfway through a %d-byte answer: the answer is held, not streamed", tc.path, grown, size)
		}
	}
}
