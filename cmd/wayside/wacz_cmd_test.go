package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/internal/testenv"
)

func runWACZCmd(t *testing.T, cfg string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return cfg
		}
		return ""
	}}
	err = run(context.Background(), args, e)
	return out.String(), errb.String(), err
}

// TestWACZCommand: create from a WARC directory signs with a key it
// creates (0600) under the configuration directory and reuses; verify
// exits 0 naming that key; a flipped byte and a truncated file exit 1 with
// one line naming the member; usage errors exit 2.
func TestWACZCommand(t *testing.T) {
	cfg := t.TempDir()
	dir := t.TempDir()
	testenv.CopyFiles(t, dir, filepath.Join(testenv.SharedDir(t), "corpus", "warc", "pywb-iana.warc.gz"),
		filepath.Join(testenv.SharedDir(t), "corpus", "warc", "warcio-example.warc.gz"))
	os.WriteFile(filepath.Join(dir, "crawl.warc.gz.open"), []byte("not closed"), 0o644)
	out := filepath.Join(t.TempDir(), "c.wacz")
	_, stderr, err := runWACZCmd(t, cfg, "wacz", "create", "-o", out, "--title", "Test", dir)
	if err != nil || !strings.Contains(stderr, "created a new signing key") || !strings.Contains(stderr, "2 WARC files") {
		t.Fatalf("create: %v\n%s", err, stderr)
	}
	key := filepath.Join(cfg, "wayside", "wacz-signing-key.pem")
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key: %v", err)
	}
	pub, _, err := runWACZCmd(t, cfg, "wacz", "pubkey")
	if err != nil {
		t.Fatal(err)
	}
	pub = strings.TrimSpace(pub)
	stdout, stderr, err := runWACZCmd(t, cfg, "wacz", "verify", "--trust", pub, out)
	if err != nil || !strings.Contains(stdout, "OK") || !strings.Contains(stdout, pub) {
		t.Fatalf("verify: %v\n%s%s", err, stdout, stderr)
	}
	// A second create reuses the key.
	out2 := filepath.Join(t.TempDir(), "d.wacz")
	if _, stderr, err := runWACZCmd(t, cfg, "wacz", "create", "-o", out2, dir); err != nil || strings.Contains(stderr, "created a new") {
		t.Fatalf("second create: %v\n%s", err, stderr)
	}
	if _, _, err := runWACZCmd(t, cfg, "wacz", "verify", "-q", "--trust", pub, out2); err != nil {
		t.Fatal(err)
	}

	// A flipped byte in the index.
	b, _ := os.ReadFile(out)
	zr, _ := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	var off int64
	for _, f := range zr.File {
		if f.Name == "indexes/index.cdxj" {
			off, _ = f.DataOffset()
		}
	}
	bad := append([]byte(nil), b...)
	bad[off+100] ^= 1
	badPath := filepath.Join(t.TempDir(), "bad.wacz")
	os.WriteFile(badPath, bad, 0o644)
	_, stderr, err = runWACZCmd(t, cfg, "wacz", "verify", badPath)
	if err == nil || report(&strings.Builder{}, err, false) != exitFailure || !strings.Contains(err.Error(), "indexes/index.cdxj") || !strings.Contains(stderr, "indexes/index.cdxj") {
		t.Fatalf("flipped byte: %v\n%s", err, stderr)
	}
	// Truncated.
	os.WriteFile(badPath, b[:len(b)/2], 0o644)
	_, _, err = runWACZCmd(t, cfg, "wacz", "verify", badPath)
	if err == nil || !strings.Contains(err.Error(), "not a complete zip") || !strings.Contains(err.Error(), "archive/pywb-iana.warc.gz") {
		t.Fatalf("truncated: %v", err)
	}

	// Unsigned: fails verify unless allowed.
	out3 := filepath.Join(t.TempDir(), "u.wacz")
	if _, _, err := runWACZCmd(t, cfg, "wacz", "create", "-q", "--no-sign", "-o", out3, dir); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runWACZCmd(t, cfg, "wacz", "verify", out3); err == nil || !strings.Contains(err.Error(), "not signed") {
		t.Fatalf("unsigned: %v", err)
	}
	if _, _, err := runWACZCmd(t, cfg, "wacz", "verify", "--allow-unsigned", out3); err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{{"wacz"}, {"wacz", "create", dir}, {"wacz", "create", "-o", "x.zip", dir}, {"wacz", "create", "-o", out}, {"wacz", "verify"},
		{"wacz", "create", "-o", filepath.Join(t.TempDir(), "q.wacz"), "--url", "http://a.example/", dir},
		{"wacz", "create", "-o", filepath.Join(t.TempDir(), "q.wacz"), "--url", "http://a.example/", "--no-sign"},
		{"wacz", "create", "-o", filepath.Join(t.TempDir(), "q.wacz"), "--url", "http://a.example/", "--match", "everything"}} {
		_, _, err := runWACZCmd(t, cfg, args...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: want a usage error, got %v", args, err)
		}
	}
	if _, _, err := runWACZCmd(t, cfg, "wacz", "create", "-o", filepath.Join(t.TempDir(), "n.wacz"), filepath.Join(dir, "none.warc.gz")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing input: %v", err)
	}
}

// TestWACZInputs: cdxj, mementomap generate, characterize and dedup run
// read a WACZ as they read the WARC files in it — the same output — the
// first three by range through the zip (no temporary copy: TMPDIR does
// not exist while they run), dedup run from a copy it leaves no trace of; a WACZ with an unsafe member name is refused,
// naming it, with nothing extracted.
func TestWACZInputs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	warcs := []string{
		filepath.Join(testenv.SharedDir(t), "corpus", "warc", "pywb-iana.warc.gz"),
		filepath.Join(testenv.SharedDir(t), "corpus", "warc", "warcio-example.warc.gz"),
	}
	w := filepath.Join(t.TempDir(), "in.wacz")
	if _, stderr, err := runWACZCmd(t, "", append([]string{"wacz", "create", "-q", "--no-sign", "-o", w}, warcs...)...); err != nil {
		t.Fatal(err, stderr)
	}
	same := func(name string, args ...string) {
		t.Helper()
		a, stderr, err := runWACZCmd(t, "", append(append([]string(nil), args...), warcs...)...)
		if err != nil {
			t.Fatalf("%s of the WARC files: %v\n%s", name, err, stderr)
		}
		b, stderr, err := runWACZCmd(t, "", append(append([]string(nil), args...), w)...)
		if err != nil {
			t.Fatalf("%s of the WACZ: %v\n%s", name, err, stderr)
		}
		strip := func(s string) string {
			var keep []string
			for _, l := range strings.Split(s, "\n") {
				if !strings.HasPrefix(l, "!meta") && !strings.Contains(l, "elapsed") {
					keep = append(keep, l)
				}
			}
			return strings.Join(keep, "\n")
		}
		if strip(a) != strip(b) || len(a) < 100 {
			t.Errorf("%s: the WACZ gives\n%.600s\nthe WARC files\n%.600s", name, b, a)
		}
	}
	// cdxj, mementomap generate and characterize read the WARC files
	// through the zip by range: with TMPDIR a directory that does not
	// exist, nothing can have been copied out.
	t.Setenv("TMPDIR", filepath.Join(tmp, "absent"))
	same("cdxj", "cdxj", "-q")
	same("mementomap generate", "mementomap", "generate", "-q")
	same("characterize", "characterize", "-q", "--json")
	t.Setenv("TMPDIR", tmp)

	d1, d2 := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	if _, stderr, err := runWACZCmd(t, "", append([]string{"dedup", "run", "-q", "-o", d1}, warcs...)...); err != nil {
		t.Fatal(err, stderr)
	}
	if _, stderr, err := runWACZCmd(t, "", "dedup", "run", "-q", "-o", d2, w); err != nil {
		t.Fatal(err, stderr)
	}
	for _, wf := range warcs {
		a, err1 := os.ReadFile(filepath.Join(d1, filepath.Base(wf)))
		b, err2 := os.ReadFile(filepath.Join(d2, filepath.Base(wf)))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("dedup run output %s differs (%v, %v)", filepath.Base(wf), err1, err2)
		}
	}
	if _, _, err := runWACZCmd(t, "", "characterize", "--write-metadata", w); err == nil || !strings.Contains(err.Error(), "--metadata-dir") {
		t.Errorf("characterize --write-metadata of a WACZ: %v", err)
	}
	if _, _, err := runWACZCmd(t, "", "dedup", "run", "--replace", "-o", d2, w); err == nil || !strings.Contains(err.Error(), "--replace") {
		t.Errorf("dedup run --replace of a WACZ: %v", err)
	}

	// A WACZ with a zip-slip member.
	slip := filepath.Join(t.TempDir(), "slip.wacz")
	f, _ := os.Create(slip)
	zw := zip.NewWriter(f)
	for _, n := range []string{"archive/ok.warc", "archive/../../../evil.warc"} {
		mw, _ := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Store})
		mw.Write([]byte("WARC/1.0\r\n"))
	}
	zw.Close()
	f.Close()
	if _, _, err := runWACZCmd(t, "", "cdxj", "-q", slip); err == nil || !strings.Contains(err.Error(), `"archive/../../../evil.warc"`) {
		t.Errorf("zip slip: %v", err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left in TMPDIR: %v", ents)
	}
}

// TestCrawlWACZ: crawl --wacz packages the crawl's WARC directory at the
// end, signed with Wayside's key, its seed the main page; wacz verify
// trusts it. A bad --wacz name is a usage error before anything is fetched.
func TestCrawlWACZ(t *testing.T) {
	srv, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg, dir := t.TempDir(), t.TempDir()
	out := filepath.Join(t.TempDir(), "crawl.wacz")
	seed := srv.URL + "/"
	if _, _, err := runWACZCmd(t, cfg, "crawl", "--warc-dir", dir, "--wacz", filepath.Join(t.TempDir(), "x.zip"), seed); err == nil || !strings.Contains(err.Error(), "must end in .wacz") {
		t.Fatalf("bad --wacz: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a refused crawl wrote %v", ents)
	}
	_, stderr, err := runWACZCmd(t, cfg, "crawl", "--warc-dir", dir, "--robots", "--delay", "0", "--parallel", "1", "--max-file-size", "40000", "--wacz", out, seed)
	if err != nil || !strings.Contains(stderr, "crawl: wrote "+out) {
		t.Fatalf("crawl --wacz: %v\n%s", err, stderr)
	}
	pub, _, _ := runWACZCmd(t, cfg, "wacz", "pubkey")
	if stdout, stderr, err := runWACZCmd(t, cfg, "wacz", "verify", "--trust", strings.TrimSpace(pub), out); err != nil {
		t.Fatalf("verify: %v\n%s%s", err, stdout, stderr)
	}
	members, files := testenv.ReadZip(t, out)
	var dp, pages []byte
	warcs := 0
	for _, f := range files {
		b := members[f.Name]
		switch {
		case f.Name == "datapackage.json":
			dp = b
		case f.Name == "pages/pages.jsonl":
			pages = b
		case strings.HasPrefix(f.Name, "archive/"):
			warcs++
		}
	}
	if on, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz")); warcs != len(on) || warcs < 2 {
		t.Errorf("%d WARC members, %d WARC files", warcs, len(on))
	}
	if !strings.Contains(string(dp), `"mainPageUrl": "`+seed+`"`) || !strings.Contains(string(pages), `"url":"`+seed+`"`) || !strings.Contains(string(pages), `"seed":true`) {
		t.Errorf("seed page missing:\n%s\n%s", dp, pages)
	}
}

// TestWACZCreateKilled: `wacz create` killed with SIGKILL while it writes
// (at failpoint wacz.warc-added, after a chosen WARC member, in a crash
// child) leaves nothing at the output path (only a temporary file and work
// directory beside it), and the next run removes those and writes a WACZ
// that verifies.
func TestWACZCreateKilled(t *testing.T) {
	in := t.TempDir()
	src := filepath.Join(testenv.SharedDir(t), "corpus", "warc", "pywb-iana.warc.gz")
	const copies = 8
	for i := range copies {
		if err := os.Symlink(src, filepath.Join(in, "copy"+strconv.Itoa(i)+".warc.gz")); err != nil {
			t.Fatal(err)
		}
	}
	outDir := t.TempDir()
	out := filepath.Join(outDir, "k.wacz")
	nth := 2 + rand.IntN(copies-3) // ~0.8 MB a member: past the writer's 64 KiB buffer, before the last
	args, _ := json.Marshal([]string{"wacz", "create", "-q", "--no-sign", "-o", out, in})
	t.Setenv(failpointsEnv, fmt.Sprintf("wacz.warc-added=%d*kill", nth)) // read by the crash child only
	if !testenv.CrashChild(t, cliChildEnv+"="+string(args), func(string) bool { return false }) {
		t.Fatalf("create was not killed after WARC member %d of %d", nth, copies)
	}
	if tmps, _ := filepath.Glob(filepath.Join(outDir, ".k.wacz.tmp-*")); len(tmps) != 1 {
		t.Fatalf("killed after WARC member %d: temporary outputs %v, want one", nth, tmps)
	} else if fi, err := os.Stat(tmps[0]); err != nil || fi.Size() < 1<<20 {
		t.Fatalf("killed after WARC member %d: the temporary output holds less than 1 MiB: %v", nth, err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a killed create left %s: %v", out, err)
	}
	left, _ := os.ReadDir(outDir)
	if len(left) != 2 {
		t.Errorf("want a temporary file and a work directory left, got %v", left)
	}
	if _, stderr, err := runWACZCmd(t, "", "wacz", "create", "-q", "--no-sign", "-o", out, in); err != nil {
		t.Fatal(err, stderr)
	}
	if left, _ := os.ReadDir(outDir); len(left) != 1 {
		t.Errorf("the next run left %v", left)
	}
	if _, stderr, err := runWACZCmd(t, "", "wacz", "verify", "-q", "--allow-unsigned", out); err != nil {
		t.Fatal(err, stderr)
	}
}

// TestFixityVerifyWACZ: `fixity verify FILE.wacz` verifies the fixity
// manifest the WACZ carries (wacz create --fixity) as it verifies the
// manifest file; a manifest changed inside the WACZ fails, and a WACZ
// without one is an error naming the member it lacks.
func TestFixityVerifyWACZ(t *testing.T) {
	warc := filepath.Join(testenv.SharedDir(t), "corpus", "warc", "pywb-iana.warc.gz")
	manifest := filepath.Join("..", "..", "fixity", "testdata", "manifests", "baseline.json")
	dir := t.TempDir()
	with := filepath.Join(dir, "with.wacz")
	if _, stderr, err := runWACZCmd(t, "", "wacz", "create", "-q", "--no-sign", "--fixity", manifest, "-o", with, warc); err != nil {
		t.Fatal(err, stderr)
	}
	direct, _, err := runWACZCmd(t, "", "fixity", "verify", manifest)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := runWACZCmd(t, "", "fixity", "verify", with)
	root := strings.Fields(direct)[1]
	if err != nil || !strings.HasPrefix(out, "ok   "+root) || !strings.Contains(out, with) {
		t.Fatalf("fixity verify of the WACZ: %v\n%s(the manifest itself: %s)", err, out, direct)
	}

	// The manifest's root changed inside the WACZ (rezipped whole).
	b, _ := os.ReadFile(manifest)
	bad := filepath.Join(dir, "bad.wacz")
	changed := bytes.Replace(b, []byte(root), []byte(strings.Repeat("0", len(root))), 1)
	if bytes.Equal(changed, b) {
		t.Fatalf("root %s not in the manifest", root)
	}
	testenv.Rezip(t, with, bad, "wayside/fixity-manifest.json", func([]byte) []byte { return changed })
	if _, _, err := runWACZCmd(t, "", "fixity", "verify", bad); err == nil {
		t.Error("a changed manifest inside a WACZ verifies")
	}
	without := filepath.Join(dir, "without.wacz")
	if _, stderr, err := runWACZCmd(t, "", "wacz", "create", "-q", "--no-sign", "-o", without, warc); err != nil {
		t.Fatal(err, stderr)
	}
	if _, _, err := runWACZCmd(t, "", "fixity", "verify", without); err == nil || !strings.Contains(err.Error(), "wayside/fixity-manifest.json") {
		t.Errorf("a WACZ without a manifest: %v", err)
	}
}
