package crawl

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocolly/colly/v2"

	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/dedupindex"
	dipebble "github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

func openTestSession(t testing.TB, dir string, ro Options, wo warcfile.WriterOptions) *Session {
	t.Helper()
	s, err := Open(Config{WARCDir: dir, Writer: wo, Recorder: ro})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestWireExactChunkedGzip serves a chunked, gzip-encoded response from a
// raw TCP listener that keeps the exact bytes it sent, on a kept-alive
// connection carrying two exchanges, and checks each response block equals
// those bytes and the payload digest is over the de-chunked (still gzipped)
// entity.
func TestWireExactChunkedGzip(t *testing.T) {
	entities := make([][]byte, 2)
	for i := range entities {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		fmt.Fprintf(zw, "exchange %d\n", i)
		zw.Write(bytes.Repeat([]byte("wire exact chunked gzip payload\n"), 200))
		zw.Close()
		entities[i] = gz.Bytes()
	}
	var sent [][]byte
	var mu sync.Mutex
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		for i := 0; i < 2; i++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			entity := entities[i]
			var b bytes.Buffer
			fmt.Fprintf(&b, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\nX-Exchange: %d\r\n\r\n", i)
			for off := 0; off < len(entity); off += 97 {
				end := min(off+97, len(entity))
				fmt.Fprintf(&b, "%x;ext=1\r\n", end-off)
				b.Write(entity[off:end])
				b.WriteString("\r\n")
			}
			b.WriteString("0\r\nX-Trailer: yes\r\n\r\n")
			mu.Lock()
			sent = append(sent, b.Bytes())
			mu.Unlock()
			conn.Write(b.Bytes())
		}
	}()
	dir := t.TempDir()
	s := openTestSession(t, dir, Options{}, warcfile.WriterOptions{})
	client := &http.Client{Transport: s.Recorder}
	base := "http://" + ln.Addr().String()
	for i := 0; i < 2; i++ {
		resp, err := client.Get(fmt.Sprintf("%s/page%d", base, i))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		entity := entities[i]
		if !bytes.Equal(body, entity) || resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("caller got %d bytes (encoding %q), want the %d-byte gzip entity", len(body), resp.Header.Get("Content-Encoding"), len(entity))
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readDir(t, dir)
	var got [][]byte
	for _, wr := range recs {
		if wr.rec.Type != "response" {
			continue
		}
		f := filepath.Join(dir, wr.file)
		blk := rawBlock(t, f, wr.rec.Offset, wr.rec.Length)
		if want := digestOf(entities[len(got)]); wr.rec.DeclaredPayloadDigest != want {
			t.Errorf("payload digest %s, want digest of the de-chunked gzip entity %s", wr.rec.DeclaredPayloadDigest, want)
		}
		got = append(got, blk)
		if wr.rec.Header("WARC-IP-Address") != "127.0.0.1" {
			t.Errorf("WARC-IP-Address %q", wr.rec.Header("WARC-IP-Address"))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || len(sent) != 2 {
		t.Fatalf("%d response records, %d responses sent", len(got), len(sent))
	}
	for i := range got {
		if !bytes.Equal(got[i], sent[i]) {
			t.Errorf("exchange %d: response block (%d bytes) differs from the bytes the server sent (%d)", i, len(got[i]), len(sent[i]))
		}
	}
	validateStrict(t, dir)
}

func rawBlock(t testing.TB, path string, off, length int64) []byte {
	f, err := openFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := readBlockAt(f, off, length)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConcurrentIdenticalFetches fetches the same payload under many URLs
// from many goroutines at once: claims race, some fetches see a pending
// claim, and no revisit may dangle.
func TestConcurrentIdenticalFetches(t *testing.T) {
	payload := bytes.Repeat([]byte("same bytes everywhere "), 500)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(payload)
	}))
	defer srv.Close()
	dir := t.TempDir()
	s := openTestSession(t, dir, Options{MaxConnsPerHost: 32}, warcfile.WriterOptions{MaxFileSize: 64 << 10})
	client := &http.Client{Transport: s.Recorder}
	const n = 64
	wave := func(w int) {
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(i%8) * time.Millisecond) // stagger: claims race commits
				resp, err := client.Get(fmt.Sprintf("%s/copy/%d/%d", srv.URL, w, i))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}()
		}
		wg.Wait()
	}
	wave(0)
	st := s.Recorder.Stats()
	if st.Responses != 1 || st.RevisitsDigest != n-1 || st.Pending != 0 {
		t.Errorf("first wave %+v: want one claimed original and the rest revisits (a fetch that meets the pending claim of another waits for it)", st)
	}
	wave(1)
	st2 := s.Recorder.Stats()
	if got := st2.RevisitsDigest - st.RevisitsDigest; got != n {
		t.Errorf("second wave: %d revisits, want %d (the original is committed)", got, n)
	}
	ix := s.Index
	if err := s.Writer.Close(); err != nil {
		t.Fatal(err)
	}
	var uris []string
	for i := 0; i < n; i++ {
		uris = append(uris, fmt.Sprintf("%s/copy/0/%d", srv.URL, i), fmt.Sprintf("%s/copy/1/%d", srv.URL, i))
	}
	checkReferences(t, dir, ix, uris)
	validateStrict(t, dir)
	ix.Close()
}

// TestTruncation cuts a body by size and a slow body by time.
func TestTruncation(t *testing.T) {
	site := sitetest.New()
	site.Add(&sitetest.Resource{Path: "/media/very-slow.bin", ContentType: "application/octet-stream", Body: sitetest.Blob(9, 64<<10), Slow: 4 * time.Second})
	srv, err := sitetest.Start(site)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, tc := range []struct {
		name string
		ro   Options
		path string
		want string
	}{
		{"length", Options{MaxBody: 10 << 10}, "/img/banner.jpg", "length"},
		{"time", Options{MaxDuration: 700 * time.Millisecond}, "/media/very-slow.bin", "time"},
		{"none", Options{MaxBody: 1 << 20, MaxDuration: time.Minute}, "/media/talk.bin", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTestSession(t, dir, tc.ro, warcfile.WriterOptions{})
			res := &Result{}
			req, _ := http.NewRequestWithContext(WithResult(context.Background(), res), "GET", srv.URL+tc.path, nil)
			resp, err := s.Recorder.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			full := site.Resource(tc.path).Body
			if tc.want != "" && len(body) >= len(full) {
				t.Errorf("body not cut: %d of %d bytes", len(body), len(full))
			}
			if !bytes.HasPrefix(full, body) {
				t.Errorf("caller's body is not a prefix of the resource")
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if res.Truncated != tc.want {
				t.Errorf("Result.Truncated %q, want %q", res.Truncated, tc.want)
			}
			n := 0
			for _, wr := range readDir(t, dir) {
				if wr.rec.Type == "response" {
					n++
					if got := wr.rec.Header("WARC-Truncated"); got != tc.want {
						t.Errorf("WARC-Truncated %q, want %q", got, tc.want)
					}
				}
			}
			if n != 1 {
				t.Fatalf("%d response records", n)
			}
			validateStrict(t, dir)
		})
	}
}

// TestRotation writes enough to rotate several times; every file is
// complete, starts with a warcinfo record and stays near the size limit.
func TestRotation(t *testing.T) {
	site := sitetest.New()
	srv, err := sitetest.Start(site)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	const limit = 40 << 10
	crawlSite(t, srv, dir, crawlOpts{parallel: 2, maxFileSize: limit})
	files := warcFiles(t, dir, true)
	if len(files) < 3 {
		t.Fatalf("%d files, want rotation into ≥ 3", len(files))
	}
	perFile := map[string][]string{}
	for _, wr := range readDir(t, dir) {
		perFile[wr.file] = append(perFile[wr.file], wr.rec.Type)
		if wr.rec.Type == "warcinfo" && wr.rec.Header("WARC-Filename") != wr.file {
			t.Errorf("warcinfo WARC-Filename %q in %s", wr.rec.Header("WARC-Filename"), wr.file)
		}
	}
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasSuffix(name, warcfile.OpenSuffix) {
			t.Errorf("%s left open", name)
		}
		if !strings.HasPrefix(name, warcfile.DefaultPrefix+"-") || len(strings.Split(name, "-")) < 4 {
			t.Errorf("file name %s is not PREFIX-TIMESTAMP-SERIAL-HOST.warc.gz", name)
		}
		if types := perFile[name]; len(types) < 2 || types[0] != "warcinfo" {
			t.Errorf("%s: records %v: want warcinfo first and at least one more", name, types)
		}
	}
	validateStrict(t, dir)
}

// TestBadURL: malformed and refused URLs give errors naming the URL.
func TestBadURL(t *testing.T) {
	for _, in := range []string{"http://exa mple.com/", "ftp://example.com/x", "not a url", "http:///nohost", "://x"} {
		_, err := ParseSeed(in)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", in)) {
			t.Errorf("ParseSeed(%q) = %v, want an error naming the URL", in, err)
		}
	}
	dir := t.TempDir()
	seed, _ := ParseSeed("http://127.0.0.1:1/")
	scope, _ := NewScope(nil, nil)
	_ = seed
	s := openTestSession(t, dir, Options{Allow: scope.Allow}, warcfile.WriterOptions{})
	defer s.Close()
	_, err := (&http.Client{Transport: s.Recorder}).Get("http://elsewhere.example/page")
	if err == nil || !strings.Contains(err.Error(), "http://elsewhere.example/page") || !strings.Contains(err.Error(), "out of scope") {
		t.Errorf("out-of-scope fetch: %v", err)
	}
}

// TestCollyTransport records a colly crawl of the site at the transport
// level, the collector set up as crawlcolly.Attach sets it (that package
// imports this one, so its own test cannot reach these helpers); colly sees
// 404 and 304 responses in OnResponse.
func TestCollyTransport(t *testing.T) {
	site := sitetest.New()
	srv, err := sitetest.Start(site)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	statuses := map[int]int{}
	for round := 0; round < 2; round++ {
		s, err := Open(Config{WARCDir: dir, Recorder: Options{Conditional: round == 1}})
		if err != nil {
			t.Fatal(err)
		}
		c := colly.NewCollector()
		c.WithTransport(s.Recorder) // as crawlcolly.Attach does
		c.ParseHTTPErrorResponse = true
		var mu sync.Mutex
		c.OnResponse(func(r *colly.Response) {
			mu.Lock()
			statuses[r.StatusCode]++
			mu.Unlock()
		})
		for _, p := range []string{"/", "/missing.html", "/blog/", "/img/photo.jpg"} {
			if err := c.Visit(srv.URL + p); err != nil {
				t.Fatal(err)
			}
		}
		c.Wait()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if statuses[404] != 2 || statuses[304] != 2 || statuses[200] != 4 {
		t.Errorf("colly saw statuses %v, want 404×2, 304×2 (conditional round), 200×4", statuses)
	}
	types := countTypes(t, dir)
	if types["revisit "+warcio.ProfileServerNotModified11] != 2 || types["revisit "+warcio.ProfileIdenticalPayloadDigest11] != 1 || types["request"] != 8 {
		t.Errorf("records %v", types)
	}
	ix, err := dipebble.Open(filepath.Join(dir, IndexSubdir))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	checkReferences(t, dir, ix, siteURLs(srv))
	validateStrict(t, dir)
	_ = dedupindex.DefaultScope
}

// TestCollision plants index entries whose digest matches but whose
// original does not: a different payload length (caught by size and bytes
// checks) and a record elsewhere (caught by the bytes check). Each writes a
// full response and counts a collision; nothing dangles.
func TestCollision(t *testing.T) {
	payload := bytes.Repeat([]byte("collision test payload "), 300)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if r.URL.Path == "/other" {
			w.Write([]byte("a different payload of the same length......"))
			return
		}
		w.Write(payload)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name      string
		verify    Verify
		lengthOff int64
		wantColl  int64
	}{
		{"size-unknown-length", VerifySize, -1, 0},
		{"bytes-unknown-length", VerifyBytes, -1, 1},
		{"size-length-differs", VerifySize, 1, 1},
		{"bytes-length-differs", VerifyBytes, 1, 1},
		{"size-wrong-record", VerifySize, 0, 0},
		{"bytes-wrong-record", VerifyBytes, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTestSession(t, dir, Options{Verify: tc.verify}, warcfile.WriterOptions{})
			client := &http.Client{Transport: s.Recorder}
			// A real record to point the fake original at.
			resp, err := client.Get(srv.URL + "/other")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			other := readDir(t, dir)[1].rec
			dig := digestOf(payload)
			key, err := s.Deduper.Key(dedupindex.DefaultScope, srv.URL+"/a", dig)
			if err != nil {
				t.Fatal(err)
			}
			fake := dedupindex.Original{Digest: dig, TargetURI: srv.URL + "/other", Date: time.Now().UTC(), RecordID: other.RecordID,
				File: strings.TrimSuffix(readDir(t, dir)[1].file, warcfile.OpenSuffix), Offset: other.Offset, Length: other.Length,
				PayloadLength: int64(len(payload)) + tc.lengthOff, Status: 200}
			if tc.lengthOff < 0 {
				fake.PayloadLength = 0 // unknown, as for originals imported from CDX
			}
			if ok, err := s.Index.Put(context.Background(), key, fake); err != nil || !ok {
				t.Fatalf("put: %v %v", ok, err)
			}
			resp, err = client.Get(srv.URL + "/a")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			st := s.Recorder.Stats()
			if st.Collisions != tc.wantColl {
				t.Errorf("collisions %d, want %d", st.Collisions, tc.wantColl)
			}
			wantRev := int64(1) - tc.wantColl
			if st.RevisitsDigest != wantRev || st.Responses != 2-wantRev {
				t.Errorf("stats %+v: want %d revisit(s)", st, wantRev)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			validateStrict(t, dir)
		})
	}
}

// TestEarlyHints: an interim 103 response before the final one is not
// taken for the response; the record holds the final response.
func TestEarlyHints(t *testing.T) {
	body := bytes.Repeat([]byte("final body "), 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload; as=style")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Set("Content-Type", "text/plain")
		w.Write(body)
	}))
	defer srv.Close()
	dir := t.TempDir()
	s := openTestSession(t, dir, Options{}, warcfile.WriterOptions{})
	resp, err := (&http.Client{Transport: s.Recorder}).Get(srv.URL + "/hints")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !bytes.Equal(got, body) {
		t.Fatalf("caller got %d, %d bytes", resp.StatusCode, len(got))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, wr := range readDir(t, dir) {
		if wr.rec.Type == "response" {
			if wr.rec.Status() != 200 || wr.rec.PayloadDigest != digestOf(body) {
				t.Errorf("response record status %d digest %s", wr.rec.Status(), wr.rec.PayloadDigest)
			}
		}
	}
	validateStrict(t, dir)
}

// TestHTTPS records through TLS: the records hold the plaintext HTTP/1.1
// exchange even though the server offers HTTP/2, and no Accept-Encoding is
// added to a request that had none.
func TestHTTPS(t *testing.T) {
	body := bytes.Repeat([]byte("secret plaintext "), 64)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Proto", r.Proto)
		w.Write(body)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	dir := t.TempDir()
	tlsCfg := srv.Client().Transport.(*http.Transport).TLSClientConfig
	s := openTestSession(t, dir, Options{TLSConfig: tlsCfg}, warcfile.WriterOptions{})
	resp, err := (&http.Client{Transport: s.Recorder}).Get(srv.URL + "/tls")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	if !bytes.Equal(got, body) || resp.Header.Get("X-Proto") != "HTTP/1.1" {
		t.Fatalf("caller got %d bytes over %s", len(got), resp.Header.Get("X-Proto"))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var sawReq, sawResp bool
	for _, wr := range readDir(t, dir) {
		if wr.rec.Type == "warcinfo" {
			continue
		}
		blk := anyBlock(t, filepath.Join(dir, wr.file), wr.rec.Offset, wr.rec.Length)
		switch wr.rec.Type {
		case "request":
			sawReq = true
			if !bytes.HasPrefix(blk, []byte("GET /tls HTTP/1.1\r\n")) || bytes.Contains(bytes.ToLower(blk), []byte("accept-encoding")) {
				t.Errorf("request block:\n%s", blk)
			}
		case "response":
			sawResp = true
			if !bytes.HasPrefix(blk, []byte("HTTP/1.1 200 OK\r\n")) || !bytes.HasSuffix(blk, body) {
				t.Errorf("response block is not the plaintext exchange:\n%.200s", blk)
			}
			if wr.rec.Header("WARC-IP-Address") != "127.0.0.1" || !strings.HasPrefix(wr.rec.TargetURI, "https://") {
				t.Errorf("IP %q target %q", wr.rec.Header("WARC-IP-Address"), wr.rec.TargetURI)
			}
		}
	}
	if !sawReq || !sawResp {
		t.Fatal("missing records")
	}
	validateStrict(t, dir)
}

// anyBlock returns the block of the record in the gzip member at off.
func anyBlock(t testing.TB, path string, off, length int64) []byte {
	f, err := openFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, blk, err := warcio.ReadMember(io.NewSectionReader(f, off, length))
	if err != nil {
		t.Fatal(err)
	}
	return blk
}

// TestFastResponseKeepsRequest: the server answers (and the recorder
// finishes the exchange) while the client goroutine has not yet returned
// from writing the request; the request record must still hold the request
// (regression: it was once recorded after the write returned, and lost).
func TestFastResponseKeepsRequest(t *testing.T) {
	site := sitetest.New()
	srv, err := sitetest.Start(site)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	s := openTestSession(t, dir, Options{MaxBody: 10 << 10, MaxConnsPerHost: 1}, warcfile.WriterOptions{})
	const n = 150
	for i := 0; i < n; i++ {
		res := &Result{}
		req, _ := http.NewRequestWithContext(WithResult(context.Background(), res), "GET", fmt.Sprintf("%s/img/banner.jpg?i=%d", srv.URL, i), nil)
		resp, err := s.Recorder.RoundTrip(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		if i%2 == 0 {
			s.Recorder.CloseIdleConnections() // new connections too
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	reqs := 0
	for _, wr := range readDir(t, dir) {
		if wr.rec.Type == "request" {
			reqs++
			if wr.rec.HTTP == nil || wr.rec.HTTP.Method != "GET" || wr.rec.ContentLength < 30 {
				t.Errorf("request record %s: %d bytes, HTTP %+v", wr.rec.TargetURI, wr.rec.ContentLength, wr.rec.HTTP)
			}
		}
	}
	if reqs != n {
		t.Errorf("%d request records, want %d", reqs, n)
	}
}
