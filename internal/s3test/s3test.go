// Package s3test runs a real S3-compatible server for tests: SeaweedFS's
// `weed server -s3` on loopback, built by scripts/seaweedfs.sh (the tests
// find it through $WAYSIDE_SEAWEEDFS_BIN, which scripts/test.sh sets, or
// build it the same way). No mock S3.
package s3test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	mu       sync.Mutex
	cmd      *exec.Cmd
	log      *bytes.Buffer
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

// freePort returns a loopback port p such that p and p+10000 (SeaweedFS's
// gRPC port for it) are free.
func freePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if p+10000 > 65535 {
			continue
		}
		if l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000)); err == nil {
			l2.Close()
			return p
		}
	}
	t.Fatal("s3test: no free port pair")
	return 0
}

// Start starts a server with a fresh data directory and the bucket
// "wayside", and sets AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY for the
// test. The server is stopped at the end of the test.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(conf, []byte(`{"identities":[{"name":"wayside","credentials":[{"accessKey":"`+AccessKey+`","secretKey":"`+SecretKey+`"}],"actions":["Admin","Read","Write","List","Tagging"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s3p, mp, vp, fp := freePort(t), freePort(t), freePort(t), freePort(t)
	data := filepath.Join(dir, "data")
	os.MkdirAll(data, 0o700)
	s := &Server{
		Endpoint: "http://127.0.0.1:" + strconv.Itoa(s3p),
		dir:      dir,
		bin:      bin,
		args: []string{"server", "-dir=" + data, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
			"-master.port=" + strconv.Itoa(mp), "-volume.port=" + strconv.Itoa(vp), "-filer.port=" + strconv.Itoa(fp),
			"-s3", "-s3.port=" + strconv.Itoa(s3p), "-s3.config=" + conf,
			"-master.volumeSizeLimitMB=64", "-volume.max=20"},
	}
	t.Setenv("AWS_ACCESS_KEY_ID", AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", SecretKey)
	s.start(t)
	t.Cleanup(func() { s.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := s.Client(t)
	for {
		err := c.MakeBucket(ctx, "wayside", minio.MakeBucketOptions{})
		if err == nil {
			break
		}
		if ok, _ := c.BucketExists(ctx, "wayside"); ok {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("s3test: the server did not become ready: %v\n%s", err, s.Log())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return s
}

func (s *Server) start(t testing.TB) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = new(bytes.Buffer)
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("s3test: %v", err)
	}
	s.cmd = cmd
}

// Stop kills the server (SIGKILL to its process group) and waits for it.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart starts the stopped server again on the same ports and data.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := s.Client(t)
	for {
		if ok, err := c.BucketExists(ctx, "wayside"); ok && err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("s3test: the server did not come back:\n%s", s.Log())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Log returns the server's output so far (for failure messages).
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.log.Bytes()
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

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
