package sidecar_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wayside-archive/wayside/client"
	"github.com/wayside-archive/wayside/sidecar"
)

// waysideBin is the real binary, built once by TestMain.
var waysideBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-test.fuzzworker") {
			return m.Run() // fuzz workers run only the fuzz target
		}
	}
	dir, err := os.MkdirTemp("", "wayside-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	waysideBin = filepath.Join(dir, "wayside")
	root := repoRoot()
	cmd := exec.Command("go", "build", "-o", waysideBin, "./cmd/wayside")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build wayside:", err)
		return 1
	}
	return m.Run()
}

func repoRoot() string {
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		dir = filepath.Dir(dir)
	}
}

const (
	testToken    = "test-token-0123456789abcdef"
	testCDXToken = "cdx-token-abcdef0123456789"
)

// runBinary runs the real wayside binary and returns its exit code and
// output.
func runBinary(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(waysideBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatalf("run %v: %v", args, err)
	return 0, "", ""
}

// daemon is a running `wayside serve` process.
type daemon struct {
	t       *testing.T
	dir     string
	cfgPath string
	sock    string
	cmd     *exec.Cmd
	logPath string
	tcp     string // base URL http://127.0.0.1:port
	client  *client.Client
	done    chan error
}

// startDaemon writes cfg (YAML, "DIR" replaced by the data dir) and starts
// the binary, waiting until it answers on its socket.
func startDaemon(t *testing.T, dir, cfg string) *daemon {
	t.Helper()
	d := &daemon{t: t, dir: dir, cfgPath: filepath.Join(dir, "wayside.yaml"), sock: filepath.Join(dir, "data", "wayside.sock")}
	if err := os.WriteFile(d.cfgPath, []byte(strings.ReplaceAll(cfg, "DIR", dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The daemon refuses to watch a directory that does not exist (a
	// mistyped path): create the ones the test configs name, as an
	// operator creates a crawler's WARC directory before the daemon starts.
	for _, sub := range []string{"warcs", filepath.Join("heritrix", "warcs")} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d.start()
	return d
}

func (d *daemon) start() {
	t := d.t
	t.Helper()
	d.logPath = filepath.Join(d.dir, fmt.Sprintf("daemon-%d.log", time.Now().UnixNano()))
	logf, err := os.Create(d.logPath)
	if err != nil {
		t.Fatal(err)
	}
	d.cmd = exec.Command(waysideBin, "serve", "-config", d.cfgPath, "-log-level", "debug")
	d.cmd.Env = append(os.Environ(), "WAYSIDE_TEST_TOKEN="+testToken)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close()
	d.done = make(chan error, 1)
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			d.cmd.Process.Kill()
			<-d.done
		}
	})
	c, err := client.New(d.sock, client.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	d.client = c
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Healthz(ctx)
		cancel()
		if err == nil {
			break
		}
		select {
		case err := <-d.done:
			d.done <- err
			t.Fatalf("daemon exited: %v\n%s", err, d.log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon not up: %v\n%s", err, d.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	var st sidecar.Status
	if err := c.Status(context.Background(), &st); err != nil {
		t.Fatal(err)
	}
	if st.TCP != "" {
		d.tcp = "http://" + st.TCP
	}
}

func (d *daemon) log() string {
	b, _ := os.ReadFile(d.logPath)
	return string(b)
}

// kill9 kills the daemon with SIGKILL (no cleanup at all).
func (d *daemon) kill9() {
	d.t.Helper()
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
	d.client.Close()
}

// term sends SIGTERM and returns the exit error.
func (d *daemon) term() error {
	d.t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		d.client.Close()
		return err
	case <-time.After(2 * time.Minute): // only catches a hang (30 s was missed on a loaded machine)
		d.t.Fatalf("daemon did not stop on SIGTERM within 2 minutes\n%s", d.log())
		return nil
	}
}

// waitFor polls cond every 50 ms for up to 2 minutes (a bound that only catches a hang).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// warcRec is one record of a test WARC.
type warcRec struct {
	Type    string // response or revisit
	URI     string
	Date    time.Time
	ID      string
	Body    []byte // response payload
	Digest  string // revisit: the original's digest (sha1:BASE32)
	RefDate time.Time
	RefURI  string
	MIME    string
	Status  int
	Chunked bool
	// Truncated adds WARC-Truncated: length (an incomplete payload).
	Truncated bool
	// Headers are more archived HTTP header lines ("Set-Cookie: a=1").
	Headers []string
}

var b32 = base32.StdEncoding

func sha1B32(b []byte) string {
	h := sha1.Sum(b)
	return b32.EncodeToString(h[:])
}

// bytes renders the record as one gzip member.
func (r warcRec) bytes() []byte {
	mime := r.MIME
	if mime == "" {
		mime = "text/html"
	}
	status := r.Status
	if status == 0 {
		status = 200
	}
	var httpb bytes.Buffer
	fmt.Fprintf(&httpb, "HTTP/1.1 %d X\r\nContent-Type: %s\r\n", status, mime)
	for _, h := range r.Headers {
		httpb.WriteString(h + "\r\n")
	}
	payloadDigest := r.Digest
	if r.Type == "response" {
		payloadDigest = "sha1:" + sha1B32(r.Body)
		if r.Chunked {
			fmt.Fprintf(&httpb, "Transfer-Encoding: chunked\r\n\r\n")
			half := len(r.Body) / 2
			fmt.Fprintf(&httpb, "%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n", half, r.Body[:half], len(r.Body)-half, r.Body[half:])
		} else {
			fmt.Fprintf(&httpb, "Content-Length: %d\r\n\r\n", len(r.Body))
			httpb.Write(r.Body)
		}
	} else {
		fmt.Fprintf(&httpb, "Content-Length: %d\r\n\r\n", len(r.Body))
	}
	var w bytes.Buffer
	fmt.Fprintf(&w, "WARC/1.1\r\nWARC-Type: %s\r\nWARC-Record-ID: %s\r\nWARC-Date: %s\r\nWARC-Target-URI: %s\r\n",
		r.Type, r.ID, r.Date.UTC().Format(time.RFC3339), r.URI)
	fmt.Fprintf(&w, "WARC-Payload-Digest: %s\r\n", payloadDigest)
	if r.Truncated {
		w.WriteString("WARC-Truncated: length\r\n")
	}
	if r.Type == "revisit" {
		fmt.Fprintf(&w, "WARC-Profile: http://netpreserve.org/warc/1.1/revisit/identical-payload-digest\r\nWARC-Refers-To-Target-URI: %s\r\nWARC-Refers-To-Date: %s\r\nWARC-Truncated: length\r\n",
			r.RefURI, r.RefDate.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&w, "Content-Type: application/http; msgtype=response\r\nContent-Length: %d\r\n\r\n", httpb.Len())
	w.Write(httpb.Bytes())
	w.WriteString("\r\n\r\n")
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(w.Bytes())
	zw.Close()
	return z.Bytes()
}

func recID(n int) string { return fmt.Sprintf("<urn:uuid:7e57%04x-0000-4000-8000-%012x>", n&0xffff, n) }

// httpGetRaw issues a GET with exactly the given headers (no automatic
// Accept-Encoding or decompression) and does not follow redirects.
func httpGetRaw(t *testing.T, rawURL string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// httpGetRawUnix GETs path over the Unix socket.
func httpGetRawUnix(t *testing.T, sock, path string) *http.Response {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("http://wayside" + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// archiveDirs makes the directories of a daemon's test archive: dir (its
// data and configuration), dir/warcs (the WARCs it ingests, returned) and
// dir/rules (its access rules).
func archiveDirs(t *testing.T) (dir, warcs string) {
	t.Helper()
	dir = t.TempDir()
	warcs = filepath.Join(dir, "warcs")
	for _, d := range []string{warcs, filepath.Join(dir, "rules")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, warcs
}

// outsideHost is a second loopback server standing for a host outside the
// archive, which replayed pages must never reach: it answers every request
// with body (allowing any origin to read it when cors, so a page's fetch
// would succeed) and records the request.
type outsideHost struct {
	URL string
	mu  sync.Mutex
	got []string // "METHOD REQUEST-URI"
}

func newOutsideHost(t *testing.T, body string, cors bool) *outsideHost {
	o := &outsideHost{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.got = append(o.got, r.Method+" "+r.URL.RequestURI())
		o.mu.Unlock()
		if cors {
			w.Header().Set("Access-Control-Allow-Origin", "*")
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	o.URL = srv.URL
	return o
}

// requests returns the requests the host has had ("METHOD REQUEST-URI"),
// but for those in except.
func (o *outsideHost) requests(except ...string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, r := range o.got {
		if !slices.Contains(except, r) {
			out = append(out, r)
		}
	}
	return out
}

// newBrowser starts headless Chromium with a profile of its own and
// returns its first tab's context, closed with the test.
func newBrowser(t *testing.T, exe string) context.Context {
	actx, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Flag("user-data-dir", t.TempDir()),
		// Sandboxed frames (the token listener's opaque-origin mementos) in
		// the page's process, so the test reaches them in its frame tree;
		// what the sandbox allows is the same.
		chromedp.Flag("disable-features", "IsolateSandboxedIframes"))...)
	t.Cleanup(cancel)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	return bctx
}

// browser is newBrowser's tab bounded to 90 s.
func browser(t *testing.T, exe string) context.Context {
	tctx, cancel := context.WithTimeout(newBrowser(t, exe), 90*time.Second)
	t.Cleanup(cancel)
	return tctx
}
