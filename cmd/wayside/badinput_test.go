package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/fixity/testarchive"
	"github.com/wayside-archive/wayside/internal/ddtest"
	"github.com/wayside-archive/wayside/internal/testenv"
)

// The bad-input catalogue: testdata/badinput/*.txt list command lines of
// the real `wayside` binary given bad flags and bad files (missing, empty,
// binary, truncated, corrupt, directories), and what must happen. One
// runner checks every case:
//
//   - the exit status (1 failure, 2 usage);
//   - stderr names the input and the problem (each "mentions" line), ends
//     with a "wayside: " error line (then the -h hint for usage errors),
//     holds no panic or goroutine dump, no raw binary, no line longer than
//     400 bytes, no package prefix twice and no input path twice in a line;
//   - nothing is left behind: the case's working directory holds only what
//     the case "leaves", TMPDIR is empty, the input files are unchanged;
//   - stderr matches the pinned text (after "---"), rewritten by -update.
//
// A case is:
//
//	=== name
//	wayside ARGS...          (shell-like quoting; $IN, $SITE... expanded)
//	exit N
//	mentions TEXT            (repeatable; $IN... expanded)
//	leaves PATH              (repeatable; relative to the working directory)
//	stdin TEXT               (optional)
//	---
//	pinned stderr            (optional: a case without "---" is not pinned)

// badCase is one case of the catalogue.
type badCase struct {
	name, file string
	args       []string
	exit       int
	mentions   []string
	leaves     []string
	stdin      string
	pinned     bool
	stderr     string // the pinned stderr
}

// parseBadCases reads a catalogue file.
func parseBadCases(t *testing.T, path string) (header string, cases []*badCase) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c *badCase
	inStderr := false
	var stderr []string
	flush := func() {
		if c != nil {
			c.stderr = strings.TrimRight(strings.Join(stderr, "\n"), "\n")
			cases = append(cases, c)
		}
		c, inStderr, stderr = nil, false, nil
	}
	for n, line := range strings.Split(string(data), "\n") {
		where := fmt.Sprintf("%s:%d", filepath.Base(path), n+1)
		switch {
		case strings.HasPrefix(line, "=== "):
			flush()
			c = &badCase{name: strings.TrimPrefix(line, "=== "), file: path, exit: -1}
		case c == nil:
			header += line + "\n"
		case inStderr:
			stderr = append(stderr, line)
		case line == "---":
			inStderr, c.pinned = true, true
		case line == "wayside" || strings.HasPrefix(line, "wayside "):
			args, err := splitArgs(strings.TrimPrefix(line, "wayside"))
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			c.args = args
		case strings.HasPrefix(line, "exit "):
			if c.exit, err = strconv.Atoi(strings.TrimPrefix(line, "exit ")); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
		case strings.HasPrefix(line, "mentions "):
			c.mentions = append(c.mentions, strings.TrimPrefix(line, "mentions "))
		case strings.HasPrefix(line, "leaves "):
			c.leaves = append(c.leaves, strings.TrimPrefix(line, "leaves "))
		case strings.HasPrefix(line, "stdin "):
			c.stdin = strings.TrimPrefix(line, "stdin ")
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
		default:
			t.Fatalf("%s: cannot parse %q", where, line)
		}
	}
	flush()
	for _, c := range cases {
		if c.args == nil || c.exit < 0 {
			t.Fatalf("%s: case %q needs a command line and an exit status", path, c.name)
		}
		if c.exit != 0 && len(c.mentions) == 0 {
			t.Fatalf("%s: case %q must say what its message mentions (the input and the problem)", path, c.name)
		}
	}
	return header, cases
}

// splitArgs splits a command line: blanks separate arguments, '...' and
// "..." quote.
func splitArgs(s string) ([]string, error) {
	args := []string{}
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote != 0 && ch == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(ch)
		case ch == '\'' || ch == '"':
			quote, in = ch, true
		case ch == ' ' || ch == '\t':
			if in {
				args = append(args, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if in {
		args = append(args, cur.String())
	}
	return args, nil
}

// writeBadCases rewrites a catalogue file with the pinned stderr of its
// cases replaced (-update).
func writeBadCases(t *testing.T, path, header string, cases []*badCase, got map[*badCase]string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	lines := strings.Split(string(data), "\n")
	i := 0
	for i < len(lines) && !strings.HasPrefix(lines[i], "=== ") {
		i++
	}
	out.WriteString(strings.Join(lines[:i], "\n"))
	if i > 0 {
		out.WriteString("\n")
	}
	for _, c := range cases {
		// Copy the case's own lines up to its pinned stderr.
		j := i + 1
		for j < len(lines) && lines[j] != "---" && !strings.HasPrefix(lines[j], "=== ") {
			j++
		}
		body := strings.TrimRight(strings.Join(lines[i:j], "\n"), "\n")
		out.WriteString(body + "\n")
		if c.pinned {
			out.WriteString("---\n")
			if s, ok := got[c]; ok {
				out.WriteString(s + "\n")
			} else {
				out.WriteString(c.stderr + "\n")
			}
		}
		out.WriteString("\n")
		i = j
		for i < len(lines) && !strings.HasPrefix(lines[i], "=== ") {
			i++
		}
	}
	if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// waysideBinary builds the wayside binary once per test run.
func waysideBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "wayside-bin-")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "wayside")
		out, err := exec.Command("go", "build", "-o", binaryPath, ".").CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// TestMain removes the binary built for the tests. Started as a CLI child
// (cliChildEnv set), the test binary instead runs one wayside command with
// the failpoints of failpointsEnv armed, as crash tests need.
func TestMain(m *testing.M) {
	if args := os.Getenv(cliChildEnv); args != "" {
		os.Exit(runCLIChild(args))
	}
	code := m.Run()
	if binaryPath != "" {
		os.RemoveAll(filepath.Dir(binaryPath))
	}
	os.Exit(code)
}

// badInputs makes the input files of the catalogue in a new directory:
// good files (from ../shared's corpus, and made from them by the binary)
// and bad ones made from those.
func badInputs(t *testing.T, bin string) string {
	t.Helper()
	shared := testenv.SharedDir(t)
	in := t.TempDir()
	write := func(name string, data []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(in, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(p string) []byte {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	runBin := func(args ...string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = in
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("wayside %v: %v\n%s", args, err, out)
		}
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	binary := make([]byte, 4096)
	for i := range binary {
		binary[i] = byte(rnd.Uint32())
	}
	// corrupt flips 64 bytes in the middle of data.
	corrupt := func(data []byte) []byte {
		c := bytes.Clone(data)
		for i := len(c) / 2; i < len(c)/2+64 && i < len(c); i++ {
			c[i] ^= 0x5a
		}
		return c
	}
	warc := read(filepath.Join(shared, "corpus", "warc", "pywb-dupes.warc.gz"))
	arc := read(filepath.Join(shared, "corpus", "arc", "warcio-example.arc.gz"))
	manifest := read(filepath.Join("..", "..", "fixity", "testdata", "manifests", "baseline.json"))
	write("good.warc.gz", warc)
	// For the output cases (outputs.txt): another name of good.warc.gz,
	// and an existing metadata file of it.
	if err := os.Symlink("good.warc.gz", filepath.Join(in, "link.warc.gz")); err != nil {
		t.Fatal(err)
	}
	write("good.characterization.warc.gz", warc)
	write("truncated.warc.gz", warc[:len(warc)*6/10])
	write("corrupt.warc.gz", corrupt(warc))
	write("good.arc.gz", arc)
	write("truncated.arc.gz", arc[:len(arc)*6/10])
	write("corrupt.arc.gz", corrupt(arc))
	write("good.json", manifest)
	write("truncated.json", manifest[:len(manifest)/2])
	for _, name := range []string{"empty.warc.gz", "empty.arc.gz", "empty.cdxj", "empty.ukvs", "empty.json", "empty.tsv", "empty.txt", "empty.yaml"} {
		write(name, nil)
	}
	for _, name := range []string{"binary.bin", "binary.warc.gz", "binary.arc.gz", "binary.cdxj", "binary.ukvs", "binary.json", "binary.tsv", "binary.yaml"} {
		write(name, binary)
	}
	// A text file that is not a WARC or ARC ("root:" reads as a URL
	// scheme, as an ARC header line would start).
	write("passwd.warc", []byte("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"))
	if err := os.Mkdir(filepath.Join(in, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	runBin("cdxj", "-q", "-o", "good.cdxj", "good.warc.gz")
	runBin("mementomap", "generate", "-q", "-o", "good.ukvs", "good.warc.gz")
	runBin("dedup", "manifest", "-q", "-o", "good.manifest", "good.warc.gz")
	cdxj := read(filepath.Join(in, "good.cdxj"))
	write("truncated.cdxj", cdxj[:len(cdxj)/2])
	ukvs := read(filepath.Join(in, "good.ukvs"))
	headers := ukvs[:bytes.Index(ukvs, []byte("\n"+"com,"))+1]
	write("headers-only.ukvs", headers)
	write("truncated.ukvs", append(bytes.Clone(headers), "com,example)/ 3/1\norg,ia"...))
	write("good.set", []byte("1 http://example.com/\n0 http://nowhere.example/\n"))
	man := read(filepath.Join(in, "good.manifest"))
	write("truncated.manifest", man[:len(man)/2])
	return in
}

// hashTree returns the SHA-256 of every file under dir, by relative path.
func hashTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel+"/"] = "dir"
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(s[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// leftBehind lists what dir holds that the case may not leave.
func leftBehind(t *testing.T, dir string, allowed []string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		for _, a := range allowed {
			if rel == a || strings.HasPrefix(rel, a+string(filepath.Separator)) {
				if d.IsDir() && rel == a {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasPrefix(a, rel+string(filepath.Separator)) {
				return nil // a parent of an allowed path
			}
		}
		out = append(out, rel)
		if d.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// closedPortURL returns an http URL of a loopback port nothing listens on.
func closedPortURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String()
	l.Close()
	return u
}

// packagePrefixes are the error prefixes of Wayside's packages: none may
// appear twice in one line (one prefix per layer).
var packagePrefixes = []string{"warcio", "cdxj", "dedupindex", "mementomap", "ukvs", "fixity", "convert", "postdedup",
	"fsutil", "sidecar", "ingest", "crawl", "surt", "digest", "pebble", "backend", "consumers", "config"}

// checkMessage checks the general rules every error message follows.
func checkMessage(t *testing.T, c *badCase, stderr string, inputs []string) {
	t.Helper()
	if !utf8.ValidString(stderr) {
		t.Errorf("stderr is not valid UTF-8 (raw input dumped?):\n%s", stderr)
	}
	for _, bad := range []string{"panic:", "goroutine ", "runtime error", "[signal "} {
		if strings.Contains(stderr, bad) {
			t.Errorf("stderr holds %q:\n%s", bad, stderr)
		}
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	for _, l := range lines {
		if len(l) > 400 {
			t.Errorf("line of %d bytes (input dumped?): %.120s…", len(l), l)
		}
		for _, r := range l {
			if r < ' ' && r != '\t' || r == 0x7f || r == utf8.RuneError {
				t.Errorf("control or invalid byte %q in stderr line %q", r, l)
				break
			}
		}
		for _, p := range packagePrefixes {
			if n := len(regexp.MustCompile(`(^|: )`+p+`: `).FindAllStringIndex(l, -1)); n > 1 {
				t.Errorf("prefix %q appears %d times in one line: %s", p+":", n, l)
			}
		}
		for _, in := range inputs {
			if n := strings.Count(l, in); n > 1 {
				t.Errorf("input %s named %d times in one line: %s", in, n, l)
			}
		}
	}
	if c.exit == 0 {
		return
	}
	last := lines[len(lines)-1]
	if c.exit == exitUsage && len(lines) >= 2 && strings.HasPrefix(last, "Run 'wayside ") {
		last = lines[len(lines)-2]
	} else if c.exit == exitUsage {
		t.Errorf("a usage error ends with the -h hint; stderr:\n%s", stderr)
	}
	if !strings.HasPrefix(last, "wayside: ") {
		t.Errorf("the error line %q does not start with \"wayside: \"; stderr:\n%s", last, stderr)
	}
}

// badEnv is what a catalogue file's cases run against.
type badEnv struct {
	bin  string
	vars map[string]string
}

func (b *badEnv) expand(s string) string {
	return os.Expand(s, func(k string) string {
		if v, ok := b.vars[k]; ok {
			return v
		}
		return "$" + k
	})
}

// normalize replaces the run's paths and ports in out by their names.
func (b *badEnv) normalize(out string) string {
	names := make([]string, 0, len(b.vars))
	for k := range b.vars {
		names = append(names, k)
	}
	// Longest values first, so $IN/x is not half-replaced by a shorter one.
	sort.Slice(names, func(i, j int) bool { return len(b.vars[names[i]]) > len(b.vars[names[j]]) })
	for _, k := range names {
		if v := b.vars[k]; v != "" {
			out = strings.ReplaceAll(out, v, "$"+k)
		}
	}
	out = regexp.MustCompile(`time=\S+`).ReplaceAllString(out, "time=T")
	return strings.TrimRight(out, "\n")
}

func TestBadInputCatalogue(t *testing.T) {
	bin := waysideBinary(t)
	files, err := filepath.Glob(filepath.Join("testdata", "badinput", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no catalogue in testdata/badinput: %v", err)
	}
	in := badInputs(t, bin)
	before := hashTree(t, in)
	site, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	env := &badEnv{bin: bin, vars: map[string]string{
		"IN": in, "IN_BASE": filepath.Base(in), "SITE": site.URL, "REFUSED": closedPortURL(t), "UNRESOLVABLE": "http://wayside-catalogue.invalid",
	}}
	for _, file := range files {
		header, cases := parseBadCases(t, file)
		got := map[*badCase]string{}
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			if strings.Contains(header, "needs: chromium") {
				addFixityArchive(t, env) // skips this file's cases without Chromium
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { got[c] = runBadCase(t, env, c) })
			}
		})
		if ddtest.Update() {
			writeBadCases(t, file, header, cases, got)
		}
	}
	if after := hashTree(t, in); !mapsEqual(before, after) {
		t.Errorf("the input files changed:\nbefore %v\nafter  %v", before, after)
	}
}

// runBadCase runs one case and returns its normalised stderr.
func runBadCase(t *testing.T, env *badEnv, c *badCase) string {
	// A short TMPDIR: Chromium's singleton socket path under it must fit
	// the 107 bytes of a Unix socket path.
	work := t.TempDir()
	tmp, err := os.MkdirTemp("", "bi")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	args := make([]string, len(c.args))
	for i, a := range c.args {
		args[i] = env.expand(a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.bin, args...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "WAYSIDE_TOKEN=", "WAYSIDE_ADDR=")
	cmd.Stdin = strings.NewReader(c.stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run: %v", err)
	}
	if code != c.exit {
		t.Errorf("exit status %d, want %d\nstderr:\n%s\nstdout:\n%.2000s", code, c.exit, stderr.String(), stdout.String())
	}
	var inputs []string
	for _, a := range args {
		if strings.HasPrefix(a, env.vars["IN"]+"/") {
			inputs = append(inputs, a)
		}
	}
	checkMessage(t, c, stderr.String(), inputs)
	for _, m := range c.mentions {
		if m = env.expand(m); !strings.Contains(stderr.String(), m) {
			t.Errorf("stderr does not mention %q:\n%s", m, stderr.String())
		}
	}
	if left := leftBehind(t, work, c.leaves); len(left) > 0 {
		t.Errorf("left behind in the working directory: %v", left)
	}
	if left := leftBehind(t, tmp, nil); len(left) > 0 {
		t.Errorf("left behind in TMPDIR: %v", left)
	}
	got := strings.ReplaceAll(env.normalize(stderr.String()), work, "$WORK")
	if c.pinned && !ddtest.Update() && got != c.stderr {
		t.Errorf("stderr differs from the pinned text (go test -run TestBadInputCatalogue -update rewrites it):\ngot:\n%s\nwant:\n%s", got, c.stderr)
	}
	return got
}

// addFixityArchive starts the fixity test archive (Chromium is needed to
// replay from it) and adds its variables: $ARCHIVE (the --archive value),
// $URIM (a memento), $URIM_404 (a URI-M the archive answers 404) and
// $URIM_503 (one it answers 503, every time).
func addFixityArchive(t *testing.T, env *badEnv) {
	t.Helper()
	arch := startTestArchive(t)
	arch.Inject(testarchive.PageRandom, testarchive.Fault{Status: 503})
	env.vars["ARCHIVE"] = "test=" + arch.Host() + "," + arch.AliasHost()
	env.vars["URIM"] = arch.URIM(testarchive.SiteTS, testarchive.PageDeterministic)
	env.vars["URIM_404"] = arch.URIM(testarchive.SiteTS, testarchive.SiteHost+"/missing")
	env.vars["URIM_503"] = arch.URIM(testarchive.SiteTS, testarchive.PageRandom)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
