package dedupindex_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/wayside-archive/wayside/client" // registers sidecar:
	"github.com/wayside-archive/wayside/dedupindex"
	_ "github.com/wayside-archive/wayside/dedupindex/pebble"
	_ "github.com/wayside-archive/wayside/dedupindex/redis"
	"github.com/wayside-archive/wayside/internal/redistest"
	"github.com/wayside-archive/wayside/internal/testenv"
)

func TestParse(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ in, scheme, path string }{
		{dir, "pebble", dir},
		{"pebble://" + dir, "pebble", dir},
		{"redis://127.0.0.1:7000,127.0.0.1:7001/?prefix=x:", "redis", ""},
		{"sidecar:///run/wayside.sock", "sidecar", "/run/wayside.sock"},
		{"./rel/idx", "pebble", ""},
	} {
		u, err := dedupindex.ParseURL(tc.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		if u.Scheme != tc.scheme || (tc.path != "" && u.Path != tc.path) {
			t.Errorf("Parse(%q) = %s %s, want %s %s", tc.in, u.Scheme, u.Path, tc.scheme, tc.path)
		}
		if tc.in == "./rel/idx" && !filepath.IsAbs(u.Path) {
			t.Errorf("bare relative path not made absolute: %s", u.Path)
		}
	}
	for _, bad := range []string{"", "ftp://x/y", "bolt:///tmp/x"} {
		if _, err := dedupindex.ParseURL(bad); !errors.Is(err, dedupindex.ErrBadURL) {
			t.Errorf("Parse(%q) = %v, want ErrBadURL", bad, err)
		}
	}
}

// A bare path and its pebble:// URL open the same embedded index.
func TestOpenPebbleByPathAndURL(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "idx")
	ix, err := dedupindex.OpenURL(ctx, dir, dedupindex.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := dedupindex.Key{Scope: dedupindex.DefaultScope, Digest: "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYA"}
	o := dedupindex.Original{Digest: k.Digest, TargetURI: "http://example.com/", Date: time.Unix(1700000000, 0).UTC(), RecordID: "<urn:uuid:x>", File: "a.warc.gz", Offset: 1, Length: 2, PayloadLength: 3}
	if _, err := ix.Put(ctx, k, o); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix, err = dedupindex.OpenURL(ctx, "pebble://"+dir, dedupindex.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	got, ok, err := ix.Lookup(ctx, k)
	if err != nil || !ok || got.RecordID != o.RecordID {
		t.Fatalf("Lookup via pebble:// = %+v %v %v", got, ok, err)
	}
}

// An unreachable Redis fails at Open with a message naming it.
func TestOpenRedisUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := dedupindex.OpenURL(ctx, "redis://127.0.0.1:1/?cluster=0", dedupindex.OpenOptions{})
	if err == nil {
		t.Fatal("Open of an unreachable Redis succeeded")
	}
	if want := "127.0.0.1:1"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name %s", err, want)
	}
}

// Bad redis:// parameters are refused before any connection is made.
func TestOpenRedisBadParameters(t *testing.T) {
	for _, q := range []string{"wait=x", "wait=-1", "wait_timeout=1s", "wait=1&wait_timeout=soon", "capacity=lots",
		"capacity=-5", "byurl=maybe", "lease=0s", "cluster=perhaps"} {
		_, err := dedupindex.OpenURL(context.Background(), "redis://127.0.0.1:1/?"+q, dedupindex.OpenOptions{})
		if !errors.Is(err, dedupindex.ErrBadURL) {
			t.Errorf("%s: %v, want ErrBadURL", q, err)
		}
	}
}

// A redis:// URL with every parameter opens a working index on a real
// 3-master + 3-replica cluster.
func TestOpenRedisCluster(t *testing.T) {
	ctx := context.Background()
	cl := redistest.New(t, redistest.Options{})
	ix, err := dedupindex.OpenURL(ctx, cl.URL("prefix=bt:&wait=1&wait_timeout=2s&capacity=1000&byurl=0&lease=1m"), dedupindex.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The optional interfaces the policy, import and `index stats --check`
	// use are there.
	_, wc := ix.(dedupindex.WindowClaimer)
	_, b := ix.(dedupindex.Batcher)
	_, c := ix.(dedupindex.Checker)
	if !wc || !b || !c {
		t.Fatalf("redis index: WindowClaimer %v, Batcher %v, Checker %v; want all", wc, b, c)
	}
	k := dedupindex.Key{Scope: dedupindex.DefaultScope, Digest: "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYA"}
	r, err := ix.Claim(ctx, k)
	if err != nil || r.State != dedupindex.Claimed {
		t.Fatalf("Claim = %v %v", r.State, err)
	}
	o := dedupindex.Original{TargetURI: "http://example.com/", Date: time.Unix(1700000000, 0).UTC(), RecordID: "<urn:uuid:x>", File: "a.warc.gz", Offset: 1, Length: 2, PayloadLength: 3}
	if err := ix.Commit(ctx, r.Ticket, o); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.ByURL(ctx, dedupindex.DefaultScope, "com,example)/"); !errors.Is(err, dedupindex.ErrNoURLIndex) {
		t.Fatalf("ByURL with byurl=0: %v", err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix, err = dedupindex.OpenURL(ctx, cl.URL("prefix=bt:"), dedupindex.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if got, ok, err := ix.Lookup(ctx, k); err != nil || !ok || got.RecordID != o.RecordID {
		t.Fatalf("Lookup after reopening = %+v %v %v", got, ok, err)
	}
}

// Each backend package registers its scheme when linked in (this test
// binary links all three); a scheme registered twice panics, as
// sql.Register does, so two backends cannot silently claim one scheme.
func TestSchemesRegisteredByBackends(t *testing.T) {
	if got, want := strings.Join(dedupindex.Schemes(), ","), "pebble,redis,sidecar"; got != want {
		t.Fatalf("Schemes() = %s, want %s", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering pebble a second time did not panic")
		}
	}()
	dedupindex.RegisterScheme("pebble", func(context.Context, *url.URL, dedupindex.OpenOptions) (dedupindex.Index, error) {
		return nil, errors.New("not reached")
	})
}

// wait=1 against a cluster whose masters have no replica (issue 21: every
// commit was logged as failed while stored, the crawl exited 1): refused
// at start-up, naming the masters; without wait= the cluster opens.
func TestOpenRedisWaitWithoutReplicas(t *testing.T) {
	ctx := context.Background()
	cl := redistest.New(t, redistest.Options{Masters: 1, Replicas: -1})
	_, err := dedupindex.OpenURL(ctx, cl.URL("prefix=nr:&wait=1"), dedupindex.OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), "wait=1") || !strings.Contains(err.Error(), " has 0 connected") {
		t.Fatalf("Open with wait=1 and no replica: %v, want a start-up error naming the master", err)
	}
	ix, err := dedupindex.OpenURL(ctx, cl.URL("prefix=nr:"), dedupindex.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ix.Close()
}

// A Redis server that is not a cluster, given as a cluster (the default):
// the error says so and how to use it (issue 21: "does not answer").
func TestOpenRedisSingleServerHint(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		testenv.MissingTool(t, "redis-server is not installed: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	srv := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var ix dedupindex.Index
	for i := 0; i < 1200; i++ { // until the server listens (the 2-minute bound only catches a hang)
		if ix, err = dedupindex.OpenURL(ctx, "redis://"+addr+"/?cluster=0&prefix=single:", dedupindex.OpenOptions{}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the single server never answered with cluster=0: %v", err)
	}
	ix.Close()
	_, err = dedupindex.OpenURL(ctx, "redis://"+addr+"/", dedupindex.OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), "single server, not a cluster") || !strings.Contains(err.Error(), "cluster=0") {
		t.Fatalf("Open of a single server as a cluster: %v, want the hint", err)
	}
}
