package s3test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStartRestart: Start waits until the bucket is made; after Stop
// and Restart (same ports and data) the server answers again and the
// bucket is still there. (Objects across restarts: warcfile/s3's tests.)
func TestStartRestart(t *testing.T) {
	srv := Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	if ok, err := c.BucketExists(ctx, "wayside"); !ok || err != nil {
		t.Fatalf("after Start: bucket exists %v, %v\n%s", ok, err, srv.Log())
	}
	srv.Stop()
	if conn, err := net.Dial("tcp", strings.TrimPrefix(srv.Endpoint, "http://")); err == nil {
		conn.Close()
		t.Fatalf("a stopped server accepted a connection")
	}
	srv.Restart(t)
	if ok, err := c.BucketExists(ctx, "wayside"); !ok || err != nil {
		t.Fatalf("after Restart: bucket exists %v, %v\n%s", ok, err, srv.Log())
	}
}

// TestWeedExitReported: when weed cannot bind its master port (taken by
// another listener) the readiness wait ends as soon as weed exits, with
// an error naming the exit, and weed's log says why (the helper's retry
// on other ports keys on that).
func TestWeedExitReported(t *testing.T) {
	bin := Binary(t)
	ports := freePorts(t, 4)
	taken, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(ports[1]))
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(conf, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, bin, dir, conf, 1, ports)
	s.start(t)
	defer s.Stop()
	err = s.ready(t, makeBucket)
	if err == nil || !strings.Contains(err.Error(), "weed exited") {
		t.Fatalf("ready with the master port taken: %v, want weed's exit\n%s", err, s.Log())
	}
	// The cause comes first in Log, before glog's goroutine dump.
	if cause, _, _ := strings.Cut(s.Log(), "output:\n"); !s.portTaken() || !strings.Contains(cause, "address already in use") || !strings.Contains(cause, strconv.Itoa(ports[1])) {
		t.Fatalf("weed's log does not name the taken port %d:\n%s", ports[1], s.Log())
	}
}
