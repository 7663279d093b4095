package sidecar

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/client"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
)

const limitsToken = "limits-token-0123456789"

// runTCP runs an in-process server with a loopback TCP listener besides
// its socket, the limits set by mutate, and returns the socket client and
// the TCP address.
func runTCP(t *testing.T, mutate func(*Config)) (*client.Client, string) {
	t.Helper()
	c, _, _ := runInProcess(t, func(c *Config) {
		c.Listen.TCP = "127.0.0.1:0"
		c.Listen.Token = limitsToken
		if mutate != nil {
			mutate(c)
		}
	})
	var st Status
	if err := c.Status(context.Background(), &st); err != nil {
		t.Fatal(err)
	}
	return c, st.TCP
}

// dialRaw opens a TCP connection and writes s on it.
func dialRaw(t *testing.T, addr, s string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if s != "" {
		if _, err := io.WriteString(conn, s); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

// closedByServer reads conn until the server closes it and returns what
// it sent. It fails the test if the connection is still open after 2 minutes
// (a bound on the test, not a measure of the timeouts).
func closedByServer(t *testing.T, conn net.Conn) string {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
	b, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection %s still open after 2 minutes; read %q", conn.LocalAddr(), b)
	}
	// EOF (ReadAll returns nil) or a reset: either way the server closed it.
	return string(b)
}

// trickle writes one byte every interval until the connection fails or
// done is closed.
func trickle(conn net.Conn, done <-chan struct{}) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if _, err := conn.Write([]byte(" ")); err != nil { // JSON white space
				return
			}
		}
	}
}

// TestStalledAndTricklingConnectionsClosed: clients that stall in their
// headers, trickle a body (100 of them unauthenticated, some with a
// token) or sit idle are disconnected by the server after
// limits.read_header_timeout, read_timeout and idle_timeout; each close
// is observed on the client's side (read returns EOF), and afterwards the
// server counts no open TCP connection.
func TestStalledAndTricklingConnectionsClosed(t *testing.T) {
	c, addr := runTCP(t, func(c *Config) {
		c.Limits.ReadHeaderTimeout = 300 * time.Millisecond
		c.Limits.ReadTimeout = time.Second
		c.Limits.IdleTimeout = time.Second
		c.Limits.MaxConns = 200
	})
	host := "Host: " + addr + "\r\n"
	done := make(chan struct{})
	defer close(done)
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string][]string{}
	check := func(kind string, conn net.Conn) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := closedByServer(t, conn)
			mu.Lock()
			got[kind] = append(got[kind], out)
			mu.Unlock()
		}()
	}
	// Headers that never end.
	for range 10 {
		check("stalled", dialRaw(t, addr, "GET /healthz HTTP/1.1\r\n"+host))
	}
	// 100 unauthenticated clients trickling a body: large (refused at
	// once, never read) and small (which a server would drain to keep the
	// connection).
	for i := range 100 {
		size := 100_000
		if i%2 == 1 {
			size = 50
		}
		conn := dialRaw(t, addr, fmt.Sprintf("POST /v1/claim HTTP/1.1\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", host, size))
		go trickle(conn, done)
		check("unauthenticated", conn)
	}
	// Clients with the token whose body never completes: the handler
	// reads it until read_timeout.
	for range 5 {
		conn := dialRaw(t, addr, fmt.Sprintf("POST /v1/claim HTTP/1.1\r\n%sAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", host, limitsToken))
		go trickle(conn, done)
		check("authenticated", conn)
	}
	// A keep-alive connection left idle after a complete request.
	idle := dialRaw(t, addr, "GET /healthz HTTP/1.1\r\n"+host+"\r\n")
	check("idle", idle)
	wg.Wait()

	if n := len(got["stalled"]); n != 10 {
		t.Errorf("%d stalled connections closed, want 10", n)
	}
	for _, out := range got["unauthenticated"] {
		if !strings.HasPrefix(out, "HTTP/1.1 401 ") || !strings.Contains(out, "Connection: close") {
			t.Errorf("unauthenticated trickling client got %q, want a 401 and the connection closed", firstLine(out))
		}
	}
	if n := len(got["unauthenticated"]); n != 100 {
		t.Errorf("%d unauthenticated trickling connections closed, want 100", n)
	}
	for _, out := range got["authenticated"] {
		if !strings.HasPrefix(out, "HTTP/1.1 400 ") || !strings.Contains(out, "timeout") {
			t.Errorf("authenticated client with an unfinished body got %q, want a 400 naming the timeout", out)
		}
	}
	if out := got["idle"]; len(out) != 1 || !strings.HasPrefix(out[0], "HTTP/1.1 200 ") {
		t.Errorf("idle keep-alive connection: %q, want its answer, then the close", out)
	}
	// The server's own count agrees: no TCP connection is left open.
	waitMetric(t, c, `wayside_http_connections{listener="tcp"}`, 0)
	if v := scrapeValue(t, c, `wayside_http_connections_total{listener="tcp"}`); v < 116 {
		t.Errorf("server accepted %v TCP connections, want at least 116", v)
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\r\n")
	return l
}

// TestConnectionLimit: with limits.max_conns 2 on TCP, a third client's
// connection waits unanswered in the accept queue while two are held open,
// and is served as soon as one of them closes; the Unix socket, with a
// limit of its own, keeps answering meanwhile. The third client asks for
// /metrics, so its answer tells how many connections the server had open
// when it was served.
func TestConnectionLimit(t *testing.T) {
	c, addr := runTCP(t, func(c *Config) {
		c.Limits.MaxConns = 2
		c.Limits.ReadHeaderTimeout = time.Minute // the held connections stay
		c.Limits.ReadTimeout = time.Minute
	})
	host := "Host: " + addr + "\r\n"
	c1 := dialRaw(t, addr, "GET /healthz HTTP/1.1\r\n"+host)
	c2 := dialRaw(t, addr, "GET /healthz HTTP/1.1\r\n"+host)
	waitMetric(t, c, `wayside_http_connections{listener="tcp"}`, 2)

	c3 := dialRaw(t, addr, "GET /metrics HTTP/1.1\r\n"+host+"Authorization: Bearer "+limitsToken+"\r\nConnection: close\r\n\r\n")
	// Asked over the socket (not full): the server accepted two TCP
	// connections only.
	if v := scrapeValue(t, c, `wayside_http_connections_total{listener="tcp"}`); v != 2 {
		t.Fatalf("server accepted %v TCP connections with the limit at 2", v)
	}
	c1.Close()
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(closedByServer(t, c3))), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("third connection after one closed: %s %s", resp.Status, body)
	}
	// Served after c1 closed: c2 and c3 open, three accepted.
	for _, want := range []string{`wayside_http_connections{listener="tcp"} 2` + "\n", `wayside_http_connections_total{listener="tcp"} 3` + "\n"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the third connection's answer lacks %s: it was served while two others were open", strings.TrimSpace(want))
		}
	}
	c2.Close()
}

// TestRequestBodyBoundedPerRoute: a body declared larger than the route
// takes is refused before it is read (413, connection closed); the CDX
// POST route takes limits.max_cdx_post_bytes.
func TestRequestBodyBoundedPerRoute(t *testing.T) {
	_, addr := runTCP(t, func(c *Config) {
		c.Limits.MaxBodyBytes = 4096
		c.Limits.MaxCDXPostBytes = 8192
	})
	auth := "Host: " + addr + "\r\nAuthorization: Bearer " + limitsToken + "\r\n"
	for _, tc := range []struct {
		path string
		size int
		want string
	}{
		{"/v1/claim", 5000, "HTTP/1.1 413 "},
		{api.PathCDX, 9000, "HTTP/1.1 413 "},
		{api.PathCDX, 5000, "HTTP/1.1 400 "}, // within the CDX limit: read, and not CDX
	} {
		conn := dialRaw(t, addr, fmt.Sprintf("POST %s HTTP/1.1\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n%s", tc.path, auth, tc.size, strings.Repeat("x", tc.size)))
		if out := closedByServer(t, conn); !strings.HasPrefix(out, tc.want) {
			t.Errorf("POST %s with %d bytes: %q, want %q", tc.path, tc.size, firstLine(out), tc.want)
		}
	}
}

// TestCDXPostChunkedTooLarge: a CDX POST without Content-Length (chunked)
// whose valid lines run past limits.max_cdx_post_bytes answers 413, not
// 400 for the line the limit cut (issue 21), and adds nothing.
func TestCDXPostChunkedTooLarge(t *testing.T) {
	c, addr := runTCP(t, func(c *Config) { c.Limits.MaxCDXPostBytes = 8192 })
	auth := "Host: " + addr + "\r\nAuthorization: Bearer " + limitsToken + "\r\n"
	var body strings.Builder
	first := ""
	for i := 0; body.Len() < 20000; i++ {
		sum := sha1.Sum([]byte(strconv.Itoa(i)))
		if i == 0 {
			first = base32.StdEncoding.EncodeToString(sum[:])
		}
		fmt.Fprintf(&body, `com,example)/p%d 20240101000000 {"url": "http://example.com/p%d", "mime": "text/html", "status": "200", "digest": "sha1:%s", "length": "1000", "offset": "%d", "filename": "a.warc.gz"}`+"\n",
			i, i, base32.StdEncoding.EncodeToString(sum[:]), i*1000)
	}
	b := body.String()
	var chunked strings.Builder
	for len(b) > 0 {
		n := min(len(b), 1000)
		fmt.Fprintf(&chunked, "%x\r\n%s\r\n", n, b[:n])
		b = b[n:]
	}
	chunked.WriteString("0\r\n\r\n")
	conn := dialRaw(t, addr, fmt.Sprintf("POST %s HTTP/1.1\r\n%sTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n%s", api.PathCDX, auth, chunked.String()))
	if out := closedByServer(t, conn); !strings.HasPrefix(out, "HTTP/1.1 413 ") {
		t.Fatalf("chunked CDX POST of %d bytes over an 8192-byte limit: %q, want 413", body.Len(), firstLine(out))
	}
	if _, ok, err := c.Lookup(context.Background(), api.Key{Digest: "sha1:" + first}); err != nil || ok {
		t.Fatalf("after the refused POST the first line's original is in the index (%v %v), want nothing added", ok, err)
	}
}

// TestDataDirIsPrivate: a new data directory (and a socket directory of
// its own) is created 0700 and the socket 0600; an existing directory
// others may read is tightened to 0700; one others may write is refused
// with an error naming it.
func TestDataDirIsPrivate(t *testing.T) {
	base := t.TempDir()
	sockDir := filepath.Join(base, "run", "wayside")
	c, cfg, stop := runInProcess(t, func(c *Config) {
		c.DataDir = filepath.Join(base, "new", "data")
		c.Listen.Unix = filepath.Join(sockDir, "w.sock")
	})
	for path, want := range map[string]os.FileMode{cfg.DataDir: 0o700 | os.ModeDir, sockDir: 0o700 | os.ModeDir} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode(), err, want)
		}
	}
	if fi, err := os.Stat(cfg.Listen.Unix); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket %s: %v %v, want mode 0600", cfg.Listen.Unix, fi.Mode(), err)
	}
	if err := c.Healthz(context.Background()); err != nil {
		t.Fatal(err)
	}
	stop()

	open := filepath.Join(base, "readable")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o755)
	newServer(t, Config{DataDir: open})
	if fi, _ := os.Stat(open); fi.Mode().Perm() != 0o700 {
		t.Errorf("existing 0755 data dir left at %v, want tightened to 0700", fi.Mode().Perm())
	}

	shared := filepath.Join(base, "shared")
	os.Mkdir(shared, 0o777)
	os.Chmod(shared, 0o777)
	cfg2 := Config{DataDir: shared}
	cfg2.Defaults()
	idx, err := pebble.Open(filepath.Join(base, "idx"))
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	_, err = New(cfg2, Options{Index: idx})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "data_dir" || !strings.Contains(err.Error(), "writable by group or others") || !strings.Contains(err.Error(), shared) {
		t.Errorf("world-writable data dir: %v, want a data_dir error naming it", err)
	}
	if fi, _ := os.Stat(shared); fi.Mode().Perm() != 0o777 {
		t.Errorf("refused data dir was changed to %v", fi.Mode().Perm())
	}
}

// newServer builds (does not run) a server on cfg over a fresh index.
func newServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	cfg.Defaults()
	idx, err := pebble.Open(filepath.Join(t.TempDir(), "idx"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	srv, err := New(cfg, Options{Index: idx})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.cons.Close() })
	return srv
}

// TestFileNamesArePlainBaseNames: every route taking a WARC file name
// refuses a path (relative, absolute, with a backslash) or a name with a
// control character, naming the field, and indexes nothing.
func TestFileNamesArePlainBaseNames(t *testing.T) {
	c, _, _ := runInProcess(t, nil)
	ctx := context.Background()
	date := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, bad := range []string{"../../../../etc/passwd", "/etc/passwd", "sub/dir.warc.gz", `..\x.warc.gz`, "..", "a\x00.warc.gz", "a\n.warc.gz"} {
		b32 := strings.Repeat(string(rune('A'+i)), 32)
		dg := "sha1:" + b32
		o := dedupindex.Original{Digest: dg, TargetURI: "http://e.example/", Date: date, RecordID: "<urn:uuid:x>", File: bad, Length: 10}
		_, err := c.Put(ctx, []dedupindex.Entry{{Key: dedupindex.Key{Digest: dg}, Original: o}})
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Code != http.StatusBadRequest || !strings.Contains(ce.Msg, "entries[0].original.file") {
			t.Errorf("put with file %q: %v, want a 400 naming entries[0].original.file", bad, err)
		}
		r, err := c.Claim(ctx, api.Key{Digest: dg})
		if err != nil || r.Ticket == nil {
			t.Fatalf("claim: %+v %v", r, err)
		}
		err = c.Commit(ctx, *r.Ticket, o)
		if !errors.As(err, &ce) || ce.Code != http.StatusBadRequest || !strings.Contains(ce.Msg, "original.file") {
			t.Errorf("commit with file %q: %v, want a 400 naming original.file", bad, err)
		}
		line := fmt.Sprintf(`org,example)/ 20200101000000 {"url": "http://example.org/", "mime": "text/html", "status": "200", "digest": "%s", "length": "10", "offset": "0", "filename": %q}`+"\n", b32, bad)
		_, err = c.AddCDX(ctx, strings.NewReader(line))
		if !errors.As(err, &ce) || ce.Code != http.StatusBadRequest || !strings.Contains(ce.Msg, "line 1") || !strings.Contains(ce.Msg, "filename") {
			t.Errorf("CDX POST with filename %q: %v, want a 400 naming line 1 and the filename", bad, err)
		}
		if _, found, err := c.Lookup(ctx, api.Key{Digest: dg}); err != nil || found {
			t.Errorf("file %q: something was indexed (%v %v)", bad, found, err)
		}
	}
}

// scrape parses the server's /metrics (text format) with the Prometheus
// library's parser and returns each sample by its name and labels as
// written (name{l="v",...}, labels in the exposition's order).
func scrape(t *testing.T, c *client.Client) map[string]float64 {
	t.Helper()
	text, err := c.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range parseMetrics(t, text) {
		for _, m := range mf.Metric {
			var ls []string
			for _, lp := range m.Label {
				ls = append(ls, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			key := mf.GetName()
			if len(ls) > 0 {
				key += "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			case m.Untyped != nil:
				out[key] = m.Untyped.GetValue()
			}
		}
	}
	return out
}

// scrapeValue returns one sample, failing the test when it is absent.
func scrapeValue(t *testing.T, c *client.Client, key string) float64 {
	t.Helper()
	v, ok := scrape(t, c)[key]
	if !ok {
		t.Fatalf("metric %s not exposed", key)
	}
	return v
}

// waitMetric polls the metrics until key has value want.
func waitMetric(t *testing.T, c *client.Client, key string, want float64) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("%s = %v", key, want), func() bool {
		v, ok := scrape(t, c)[key]
		return ok && v == want
	})
}

// waitUntil polls cond every 20 ms, failing the test after 2 minutes (a bound that only catches a hang).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
