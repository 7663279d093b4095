package fixity

import (
	"context"
	"flag"
	"github.com/wayside-archive/wayside/internal/testenv"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/fixity/testarchive"
)

// env is one test archive and one shared browser for the Chromium tests of
// this package; every replay still gets a fresh incognito profile.
type testEnv struct {
	arch *testarchive.Server
	cfg  *Config
	rep  *Replayer
}

func chromiumPath(t testing.TB) string {
	t.Helper()
	p := findChromium()
	if _, err := exec.LookPath(p); err != nil {
		testenv.MissingTool(t, "fixity: no Chromium binary (%s): install chromium to run the replay tests", p)
	}
	return p
}

// newEnv starts a test archive with the built-in site and a replayer.
func newEnv(t testing.TB, opts ...func(*ReplayOptions)) *testEnv {
	t.Helper()
	arch := newArchive(t)
	cfg, err := NewConfig(Archive{Name: "testarchive", Hosts: []string{arch.Host(), arch.AliasHost()}})
	if err != nil {
		t.Fatal(err)
	}
	o := ReplayOptions{Config: cfg, ExecPath: chromiumPath(t), Quiet: 400 * time.Millisecond, HardCap: 6 * time.Second, RawTimeout: 3 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	rep, err := NewReplayer(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rep.Close() })
	return &testEnv{arch: arch, cfg: cfg, rep: rep}
}

// newArchive starts a test archive with the built-in site.
func newArchive(t testing.TB) *testarchive.Server {
	t.Helper()
	return testarchive.Start(t)
}

func (e *testEnv) replay(t testing.TB, urir string, opts ...ReplayOption) *Manifest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m, err := e.rep.Replay(ctx, e.arch.URIM(testarchive.SiteTS, urir), opts...)
	if err != nil {
		t.Fatalf("replay %s: %v", urir, err)
	}
	return m
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(m.Run())
}
