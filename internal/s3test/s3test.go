// Package s3test runs a real S3-compatible server for tests: SeaweedFS's
// `weed server -s3` on loopback, built by scripts/seaweedfs.sh (the tests
// find it through $WAYSIDE_SEAWEEDFS_BIN, which scripts/test.sh sets, or
// build it the same way). No mock S3.
package s3test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// Credentials of the test server's one identity.
const (
	AccessKey = "waysidetestaccess"
	SecretKey = "waysidetestsecretkey0123456789"
)

// Server is a running SeaweedFS with its S3 gateway.
type Server struct {
	// Endpoint is "http://127.0.0.1:PORT".
	Endpoint string
	dir      string
	args     []string
	bin      string
	ports    []int
	log      *logBuffer // all runs' output

	mu      sync.Mutex
	cmd     *exec.Cmd     // nil when stopped
	exited  chan struct{} // closed when the last process has exited
	waitErr error         // how it exited
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// Binary returns the weed binary: $WAYSIDE_SEAWEEDFS_BIN, else built (or
// taken from the cache) by scripts/seaweedfs.sh.
func Binary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		if p := os.Getenv("WAYSIDE_SEAWEEDFS_BIN"); p != "" {
			binPath = p
			return
		}
		out, err := exec.Command(filepath.Join(testenv.RepoRoot(t), "scripts", "seaweedfs.sh")).Output()
		if err != nil {
			binErr = fmt.Errorf("scripts/seaweedfs.sh: %v", err)
			return
		}
		binPath = string(bytes.TrimSpace(out))
	})
	if binErr != nil {
		testenv.MissingTool(t, "SeaweedFS: %v", binErr)
	}
	if _, err := os.Stat(binPath); err != nil {
		testenv.MissingTool(t, "SeaweedFS: %v", err)
	}
	return binPath
}

// freePorts returns n distinct loopback ports p such that p and p+10000
// (SeaweedFS's gRPC port for it) are free, outside the ephemeral range (a
// port from it can be taken by any outgoing connection's local end
// between the check and weed's bind, and weed then exits).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports, err := testenv.FreePortPairs(n, 10000)
	if err != nil {
		t.Fatalf("s3test: %v", err)
	}
	return ports
}

// startAttempts bounds the starts on fresh ports when weed exits because
// a port was taken after freePorts found it free (another test binding
// it explicitly in between).
const startAttempts = 3

// readyBound only keeps a test from hanging on a server that never
// becomes ready; readiness itself is the bucket answering.
const readyBound = 3 * time.Minute

// Start starts a server with a fresh data directory and the bucket
// "wayside", and sets AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY for the
// test. The server is stopped at the end of the test. It is ready when
// the bucket can be made (or exists); if weed exits first because one of
// its ports was taken meanwhile, it is started again on other ports;
// any other failure ends the test with weed's own log.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(conf, []byte(`{"identities":[{"name":"wayside","credentials":[{"accessKey":"`+AccessKey+`","secretKey":"`+SecretKey+`"}],"actions":["Admin","Read","Write","List","Tagging"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", SecretKey)
	for attempt := 1; ; attempt++ {
		s := newServer(t, bin, dir, conf, attempt, freePorts(t, 4))
		s.start(t)
		err := s.ready(t, makeBucket)
		if err == nil {
			t.Cleanup(s.cleanup)
			return s
		}
		// Stop only: the sockets named by its ports may be another
		// server's, the one that took a port.
		s.Stop()
		if !s.portTaken() || attempt == startAttempts {
			t.Fatalf("s3test: the server did not become ready (attempt %d of %d): %v\nweed's log:\n%s", attempt, startAttempts, err, s.Log())
		}
		t.Logf("s3test: weed could not bind a port (%v), starting it again on others; its log:\n%s", err, s.Log())
	}
}

// newServer returns the server of a start attempt on ports (S3, master,
// volume, filer), not started, with its data in dir/dataN.
func newServer(t testing.TB, bin, dir, conf string, attempt int, ports []int) *Server {
	t.Helper()
	data := filepath.Join(dir, "data"+strconv.Itoa(attempt))
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	s3p, mp, vp, fp := ports[0], ports[1], ports[2], ports[3]
	return &Server{
		Endpoint: "http://127.0.0.1:" + strconv.Itoa(s3p),
		dir:      dir,
		bin:      bin,
		ports:    ports,
		log:      &logBuffer{},
		args: []string{"server", "-dir=" + data, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
			"-master.port=" + strconv.Itoa(mp), "-volume.port=" + strconv.Itoa(vp), "-filer.port=" + strconv.Itoa(fp),
			"-s3", "-s3.port=" + strconv.Itoa(s3p), "-s3.config=" + conf,
			// No listeners on fixed default ports (two servers would
			// contend for them) and no report to the Internet.
			"-s3.port.iceberg=0", "-s3.port.lance=0", "-master.telemetry=false",
			"-master.volumeSizeLimitMB=64", "-volume.max=20"},
	}
}

// makeBucket is Start's readiness probe: the bucket can be made (or
// exists already).
func makeBucket(ctx context.Context, c *minio.Client) error {
	err := c.MakeBucket(ctx, "wayside", minio.MakeBucketOptions{})
	if err != nil {
		if ok, _ := c.BucketExists(ctx, "wayside"); ok {
			return nil
		}
	}
	return err
}

// ready waits until probe succeeds against the server, the weed process
// exits (an error naming its exit status) or readyBound passes.
func (s *Server) ready(t testing.TB, probe func(context.Context, *minio.Client) error) error {
	t.Helper()
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), readyBound)
	defer cancel()
	// A probe in flight (minio retries refused connections) ends when weed
	// exits.
	go func() {
		select {
		case <-exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	c := s.Client(t)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		err := probe(ctx, c)
		if err == nil {
			return nil
		}
		exitedErr := func() error {
			return fmt.Errorf("weed exited before it was ready (%v); last probe: %v", s.exitErr(), err)
		}
		select {
		case <-exited:
			return exitedErr()
		case <-ctx.Done():
			select {
			case <-exited: // the watcher cancelled ctx
				return exitedErr()
			default:
			}
			return fmt.Errorf("not ready after %s; last probe: %v", readyBound, err)
		case <-tick.C:
		}
	}
}

func (s *Server) start(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("s3test: %v", err)
	}
	s.cmd = cmd
	exited := make(chan struct{})
	s.exited = exited
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		s.waitErr = err
		s.mu.Unlock()
		close(exited)
	}()
}

// exitErr is how the last weed process ended.
func (s *Server) exitErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waitErr == nil {
		return errors.New("exit status 0")
	}
	return s.waitErr
}

// portTaken reports whether weed's log says a port it was to listen on
// was in use.
func (s *Server) portTaken() bool {
	return strings.Contains(s.log.String(), "address already in use")
}

// Stop kills the server (SIGKILL to its process group) and waits for it.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
}

// cleanup stops the server and removes the Unix sockets weed creates in
// /tmp, named by its ports (its own: it was listening on them), which a
// killed weed leaves behind.
func (s *Server) cleanup() {
	s.Stop()
	for _, p := range s.ports {
		for _, name := range []string{"master-grpc", "volume-grpc", "filer-grpc", "s3-grpc"} {
			os.Remove(fmt.Sprintf("/tmp/seaweedfs-%s-%d.sock", name, p+10000))
		}
		os.Remove(fmt.Sprintf("/tmp/seaweedfs-filer-%d.sock", p))
		os.Remove(fmt.Sprintf("/tmp/seaweedfs-s3-%d.sock", p))
	}
}

// Restart starts the stopped server again on the same ports and data.
// It is ready when the bucket exists; if weed exits first, or does not
// become ready within readyBound, the test ends with weed's log.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	fmt.Fprintf(s.log, "\n--- s3test: restart ---\n")
	s.start(t)
	err := s.ready(t, func(ctx context.Context, c *minio.Client) error {
		ok, err := c.BucketExists(ctx, "wayside")
		if err == nil && !ok {
			err = errors.New("bucket wayside does not exist")
		}
		return err
	})
	if err != nil {
		t.Fatalf("s3test: the server did not come back: %v\nweed's log:\n%s", err, s.Log())
	}
}

// logBuffer collects weed's output; exec's copying goroutines write it
// while a test may read it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Log returns the server's output so far (for failure messages): its
// error and fatal lines first (glog's "E…"/"F…" lines: a fatal one is
// followed by every goroutine's stack, which would push it out of the
// tail), then the end of the output.
func (s *Server) Log() string {
	all := s.log.String()
	var b strings.Builder
	for line := range strings.Lines(all) {
		if len(line) > 5 && (line[0] == 'F' || line[0] == 'E') && strings.Trim(line[1:5], "0123456789") == "" {
			if b.Len() == 0 {
				b.WriteString("errors:\n")
			}
			if b.Len() < logTail {
				b.WriteString(line)
			}
		}
	}
	if b.Len() > 0 {
		b.WriteString("output:\n")
	}
	if len(all) > logTail {
		b.WriteString("[…]")
		all = all[len(all)-logTail:]
	}
	b.WriteString(all)
	return b.String()
}

// logTail bounds each part of what Log returns.
const logTail = 16 << 10

// Client returns a minio client of the test identity.
func (s *Server) Client(t testing.TB) *minio.Client {
	t.Helper()
	c, err := minio.New(s.Endpoint[len("http://"):], &minio.Options{Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""), BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// URL is the s3:// location of prefix in the test bucket.
func (s *Server) URL(prefix string) string {
	return "s3://wayside/" + prefix + "?endpoint=" + s.Endpoint
}
