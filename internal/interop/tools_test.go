package interop_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// The wayside binary, built once per test process: the outputs checked here
// are the files users get from the commands they run.
var (
	buildOnce sync.Once
	waysideP  string
	buildErr  error
)

// wayside runs the wayside binary with args and returns its stdout; a
// non-zero exit fails the test with the command's stderr.
func wayside(t testing.TB, args ...string) string {
	t.Helper()
	root := testenv.RepoRoot(t)
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "wayside-interop-bin-")
		if err != nil {
			buildErr = err
			return
		}
		waysideP = filepath.Join(dir, "wayside")
		cmd := exec.Command("go", "build", "-o", waysideP, "./cmd/wayside")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = err
			waysideP = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("go build ./cmd/wayside: %v\n%s", buildErr, waysideP)
	}
	return run(t, waysideP, args...)
}

// run runs a program (bounded to five minutes) and returns its stdout.
func run(t testing.TB, prog string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(prog), strings.Join(args, " "), err, tail(stderr.String(), 4000))
	}
	return stdout.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// jsTools locates node and the npm packages scripts/interop-js.sh installs
// (warcio.js, wabac.js, fake-indexeddb at the versions pinned in
// js/package-lock.json), in a cache directory named after the lock file's
// hash. A missing tool skips the test, or fails it under
// WAYSIDE_REQUIRE_TOOLS (scripts/test.sh installs both).
type jsTools struct {
	node string
	dir  string // holds the scripts and a node_modules link
}

func tools(t testing.TB) jsTools {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.MissingTool(t, "interop: node is not installed: run scripts/interop-js.sh (it installs Debian's nodejs and npm, then the pinned npm packages)")
	}
	lock, err := os.ReadFile(filepath.Join("js", "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	cache := os.Getenv("WAYSIDE_INTEROP_JS")
	if cache == "" {
		sum := sha256.Sum256(lock)
		base, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(base, "wayside", "interop-js-"+hex.EncodeToString(sum[:])[:12])
	}
	if _, err := os.Stat(filepath.Join(cache, ".complete")); err != nil {
		testenv.MissingTool(t, "interop: the npm packages of internal/interop/js are not installed in %s: run scripts/interop-js.sh", cache)
	}
	dir := t.TempDir()
	for _, s := range []string{"check.mjs", "replay.mjs", "replay-wacz.mjs", "check-wacz.mjs", "replay-get.mjs"} {
		b, err := os.ReadFile(filepath.Join("js", s))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, s), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(cache, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return jsTools{node: node, dir: dir}
}

// nodeJSON runs a script of js/ over files (one node process for all of
// them) and decodes the JSON document it prints.
func (j jsTools) nodeJSON(t testing.TB, v any, script string, files ...string) {
	t.Helper()
	out := run(t, j.node, append([]string{filepath.Join(j.dir, script)}, files...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%s: output is not JSON: %v\n%s", script, err, tail(out, 2000))
	}
}

// jsRecord is a record as warcio.js reads it (js/check.mjs). Digest maps
// are algorithm ("sha1", "sha256") → hex.
type jsRecord struct {
	Offset     int64             `json:"offset"`
	Length     int64             `json:"length"`
	Headers    map[string]string `json:"headers"`
	Block      map[string]string `json:"block"`
	BlockLen   int64             `json:"blockLen"`
	HTTP       bool              `json:"http"`
	Status     int               `json:"status"`
	Chunked    bool              `json:"chunked"`
	Payload    map[string]string `json:"payload"`
	PayloadLen int64             `json:"payloadLen"`
	Raw        map[string]string `json:"raw"`
}

func (r *jsRecord) h(name string) string { return strings.TrimSpace(r.Headers[name]) }

type jsFile struct {
	Path    string     `json:"path"`
	Error   string     `json:"error"`
	Records []jsRecord `json:"records"`
}

// warcioRecords reads every file with warcio.js.
func (j jsTools) warcioRecords(t testing.TB, files []string) map[string][]jsRecord {
	t.Helper()
	var doc struct {
		Files []jsFile `json:"files"`
	}
	j.nodeJSON(t, &doc, "check.mjs", files...)
	out := map[string][]jsRecord{}
	for _, f := range doc.Files {
		if f.Error != "" {
			t.Errorf("%s: warcio.js cannot read it: %s", f.Path, tail(f.Error, 1500))
			continue
		}
		out[f.Path] = f.Records
	}
	if len(out) != len(files) && !t.Failed() {
		t.Fatalf("warcio.js reported %d of %d files", len(out), len(files))
	}
	return out
}

// warcioCDXJ runs the warcio CLI's own indexer (`warcio cdx-index`, CDXJ
// format) over files and returns its lines.
func (j jsTools) warcioCDXJ(t testing.TB, files []string) []string {
	t.Helper()
	cli := filepath.Join(j.dir, "node_modules", "warcio", "dist", "cli.js")
	out := run(t, j.node, append([]string{cli, "cdx-index"}, files...)...)
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// wabacResult is what js/replay.mjs reports for a revisit wabac.js indexed.
type wabacResult struct {
	URL      string `json:"url"`
	TS       int64  `json:"ts"`
	OrigURL  string `json:"origURL"`
	OrigTS   int64  `json:"origTS"`
	Digest   string `json:"digest"`
	Original *struct {
		URL     string `json:"url"`
		TS      int64  `json:"ts"`
		Status  int    `json:"status"`
		Digest  string `json:"digest"`
		Revisit bool   `json:"revisit"`
	} `json:"original"`
	Replay         *replayed `json:"replay"`
	OriginalReplay *replayed `json:"originalReplay"`
}

// replayed is wabac.js's answer to a replay request: the URL it served,
// the status and the payload as served (Content-Encoding decoded).
type replayed struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	Length int64  `json:"length"`
	SHA1   string `json:"sha1"`
	SHA256 string `json:"sha256"`
}

// wabacRevisits loads files into one wabac.js collection and replays every
// revisit it indexed.
func (j jsTools) wabacRevisits(t testing.TB, files []string) []wabacResult {
	t.Helper()
	var doc struct {
		Revisits []wabacResult `json:"revisits"`
	}
	j.nodeJSON(t, &doc, "replay.mjs", files...)
	return doc.Revisits
}
