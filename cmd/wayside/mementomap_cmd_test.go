package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

func runMMCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	err = run(context.Background(), append([]string{"mementomap"}, args...), &env{stdin: strings.NewReader(stdin), stdout: &o, stderr: &e, getenv: func(string) string { return "" }})
	return o.String(), e.String(), err
}

// TestMementoMapCommandCorpus runs generate over the real WARC corpus, then
// compact, lookup (arguments and batch), merge and eval on the result.
func TestMementoMapCommandCorpus(t *testing.T) {
	warcs := testenv.CorpusWARCs(t)
	dir := t.TempDir()
	full := filepath.Join(dir, "full.ukvs")
	_, stderr, err := runMMCLI(t, "", append([]string{"generate", "-o", full, "--id", "http://archive.example/", "--skip-bad"}, warcs...)...)
	if err != nil {
		t.Fatalf("generate: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "captures read") || !strings.Contains(stderr, "reading ") {
		t.Fatalf("no progress/summary on stderr:\n%s", stderr)
	}
	b, err := os.ReadFile(full)
	if err != nil || !strings.HasPrefix(string(b), "!context") || !strings.Contains(string(b), "\n!id {\"uri\":\"http://archive.example/\"}\n") {
		t.Fatalf("generated map:\n%.500s (%v)", b, err)
	}
	if fi, _ := os.Stat(full); fi.Mode().Perm() != 0o644 {
		t.Fatalf("map mode %v", fi.Mode())
	}
	small := filepath.Join(dir, "small.ukvs")
	if _, stderr, err := runMMCLI(t, "", "compact", "--w", "0.1", "--workers", "2", full, small); err != nil || !strings.Contains(stderr, "rollups") {
		t.Fatalf("compact: %v\n%s", err, stderr)
	}
	if _, stderr, err := runMMCLI(t, "", "compact", "--means", "powerlaw", "--workers", "1", full, filepath.Join(dir, "pl.ukvs")); err != nil || !strings.Contains(stderr, "means 16.3,") {
		t.Fatalf("compact --means powerlaw: %v\n%s", err, stderr)
	}
	out, _, err := runMMCLI(t, "", "lookup", small, "http://www.iana.org/", "http://unseen.example.net/x", "com,example)/")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "present\thttp://www.iana.org/\torg,iana") || !strings.HasPrefix(lines[1], "absent\t") {
		t.Fatalf("lookup:\n%s", out)
	}
	// One bad target in a batch: an error line, the rest answered, exit 1
	// at the end.
	out, _, err = runMMCLI(t, "http://www.iana.org/\nhttp://[::1/x\nhttp://www.iana.org/domains/example\norg,iana)\n", "lookup", small)
	if err == nil || !strings.Contains(err.Error(), "1 of 4 targets were invalid") || strings.Count(out, "present\t") != 3 ||
		!strings.Contains(out, "\nerror\thttp://[::1/x\t") || !strings.HasSuffix(out, "present\torg,iana)\torg,iana,*\t181/31\n") {
		t.Fatalf("batch lookup: %v\n%s", err, out)
	}
	merged := filepath.Join(dir, "merged.ukvs")
	if _, stderr, err := runMMCLI(t, "", "merge", "-o", merged, full, small); err != nil || !strings.Contains(stderr, "keys summed") {
		t.Fatalf("merge: %v\n%s", err, stderr)
	}
	set := filepath.Join(dir, "set.txt")
	if err := os.WriteFile(set, []byte("1 http://www.iana.org/\n1 http://www.iana.org/domains/example\n0 http://unseen.example.net/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = runMMCLI(t, "", "eval", "--map", small, "--full", full, "--set", set)
	if err != nil || !strings.Contains(out, "recall\t1.0000") || !strings.Contains(out, "relative cost\t") {
		t.Fatalf("eval: %v\n%s", err, out)
	}
}

func TestMementoMapCommandSynthSweep(t *testing.T) {
	dir := t.TempDir()
	full, set, table, plot := filepath.Join(dir, "full.ukvs"), filepath.Join(dir, "set.txt"), filepath.Join(dir, "t.tsv"), filepath.Join(dir, "p.svg")
	if _, stderr, err := runMMCLI(t, "", "synth", "-n", "20000", "-o", full, "--set", set, "--absent", "1000"); err != nil {
		t.Fatalf("synth: %v\n%s", err, stderr)
	}
	if _, stderr, err := runMMCLI(t, "", "eval", "--full", full, "--set", set, "--sweep", "8,1,0.1", "--table", table, "--plot", plot); err != nil {
		t.Fatalf("sweep: %v\n%s", err, stderr)
	}
	tb, _ := os.ReadFile(table)
	rows := strings.Split(strings.TrimSpace(string(tb)), "\n")
	if len(rows) != 4 || !strings.HasPrefix(rows[0], "wh\twp\tfrom\tlines") || !strings.HasPrefix(rows[2], "1\t1\twh=8,wp=8\t") {
		t.Fatalf("table:\n%s", tb)
	}
	for _, r := range rows[1:] {
		if f := strings.Split(r, "\t"); f[10] != "1.0000" {
			t.Errorf("recall is not 1.0: %s", r)
		}
	}
	svg, _ := os.ReadFile(plot)
	if !bytes.HasPrefix(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("Wh = Wp")) || !bytes.Contains(svg, []byte("</svg>")) {
		t.Fatalf("plot:\n%.300s", svg)
	}
}

// TestMementoMapCommandGridAndLog: eval --grid over the paper's 36 pairs
// on a lookup log in access-log form, labelled against the full map.
func TestMementoMapCommandGridAndLog(t *testing.T) {
	dir := t.TempDir()
	full, set, table, plot, logPath := filepath.Join(dir, "full.ukvs"), filepath.Join(dir, "set.txt"), filepath.Join(dir, "t.tsv"),
		filepath.Join(dir, "p.svg"), filepath.Join(dir, "access.log")
	if _, stderr, err := runMMCLI(t, "", "synth", "-n", "20000", "-o", full, "--set", set, "--absent", "300"); err != nil {
		t.Fatalf("synth: %v\n%s", err, stderr)
	}
	// The labelled set's URIs as Wayback requests, each twice, plus lines
	// that are not lookups.
	b, _ := os.ReadFile(set)
	var log strings.Builder
	nPresent := 0
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		label, uri, _ := strings.Cut(l, " ")
		if label == "1" {
			nPresent++
		}
		for range 2 {
			fmt.Fprintf(&log, "127.0.0.1 - - [01/Jan/2019:00:00:00 +0000] \"GET /web/20190101000000/%s HTTP/1.1\" 200 10 \"-\" \"curl\"\n", uri)
		}
	}
	log.WriteString("127.0.0.1 - - [01/Jan/2019:00:00:00 +0000] \"GET /favicon.ico HTTP/1.1\" 404 0\n")
	if err := os.WriteFile(logPath, []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runMMCLI(t, "", "eval", "--grid", "--full", full, "--log", logPath, "--table", table, "--plot", plot)
	if err != nil {
		t.Fatalf("grid: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, fmt.Sprintf("(%d present, 300 absent)", nPresent)) || !strings.Contains(stderr, "1 without a target") ||
		!strings.Contains(stderr, "36 pairs") || !strings.Contains(stderr, "chained") {
		t.Fatalf("grid stderr:\n%s", stderr)
	}
	tb, _ := os.ReadFile(table)
	rows := strings.Split(strings.TrimSpace(string(tb)), "\n")
	if len(rows) != 37 || !strings.HasPrefix(rows[0], "wh\twp\tfrom\tlines") {
		t.Fatalf("table:\n%s", tb)
	}
	for _, r := range rows[1:] {
		if f := strings.Split(r, "\t"); f[10] != "1.0000" || f[6] == "-" {
			t.Errorf("recall is not 1.0 or no cost per URI-R: %s", r)
		}
	}
	svg, _ := os.ReadFile(plot)
	if !bytes.HasPrefix(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("Wh=0.25")) || !bytes.Contains(svg, []byte("</svg>")) {
		t.Fatalf("plot:\n%.300s", svg)
	}
	out, _, err := runMMCLI(t, "", "eval", "--map", full, "--full", full, "--log", logPath)
	if err != nil || !strings.Contains(out, "accuracy\t1.0000") || !strings.Contains(out, "relative cost per URI-R\t") {
		t.Fatalf("eval --map --log: %v\n%s", err, out)
	}
	if _, _, err := runMMCLI(t, "", "eval", "--grid", "--log", logPath); err == nil || !strings.Contains(err.Error(), "need --full") {
		t.Fatalf("grid without --full: %v", err)
	}
}

// TestMementoMapCommandStats: stats of the corpus WARCs (text and an SVG),
// of a map (JSON), and the usage errors of mixing them.
func TestMementoMapCommandStats(t *testing.T) {
	warcs := testenv.CorpusWARCs(t)
	dir := t.TempDir()
	svg := filepath.Join(dir, "depths.svg")
	out, stderr, err := runMMCLI(t, "", append([]string{"stats", "--skip-bad", "--svg", svg}, warcs...)...)
	if err != nil || !strings.Contains(out, "holdings (from captures)") || !strings.Contains(out, "URI-Rs                  131\n") ||
		!strings.Contains(out, "\nyear\tURI-Ms\tURI-Rs\tnew URI-Rs") || !strings.Contains(out, "\nP0\t24\t131\t") {
		t.Fatalf("stats: %v\n%s%s", err, out, stderr)
	}
	b, _ := os.ReadFile(svg)
	if !bytes.HasPrefix(b, []byte("<svg")) || !bytes.Contains(b, []byte(">H1<")) || !bytes.Contains(b, []byte(">P0<")) {
		t.Fatalf("svg:\n%.300s", b)
	}
	ref := filepath.Join(testenv.SharedDir(t), "corpus", "mementomap", "reference-full.ukvs")
	out, _, err = runMMCLI(t, "", "stats", "--json", ref)
	var h struct {
		Source   string `json:"source"`
		Mementos int64  `json:"mementos"`
		Keys     int64  `json:"keys"`
		PerKey   bool   `json:"per_key"`
	}
	if err != nil || json.Unmarshal([]byte(out), &h) != nil || h.Source != "map" || h.Mementos != 305 || h.Keys != 118 || !h.PerKey {
		t.Fatalf("stats --json of a map: %v %+v\n%s", err, h, out)
	}
	var ue usageError
	if _, _, err := runMMCLI(t, "", "stats", ref, warcs[0]); !errors.As(err, &ue) {
		t.Fatalf("a map with capture files: %v", err)
	}
	if _, _, err := runMMCLI(t, "", "generate", "-o", filepath.Join(dir, "x.ukvs"), ref); !errors.As(err, &ue) || !strings.Contains(err.Error(), "is a map, not a list of captures") {
		t.Fatalf("generate from a map: %v", err)
	}
}

func TestMementoMapCommandErrors(t *testing.T) {
	dir := t.TempDir()
	// An unsorted map is normalised (sorted) on read, not refused.
	unsorted := filepath.Join(dir, "unsorted.ukvs")
	if err := os.WriteFile(unsorted, []byte("com,b)/ 1\ncom,a)/ 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := runMMCLI(t, "", "compact", unsorted, filepath.Join(dir, "out.ukvs")); err != nil || !strings.Contains(stderr, "1 out of order") {
		t.Fatalf("unsorted input: %v\n%s", err, stderr)
	}
	if out, stderr, err := runMMCLI(t, "", "lookup", unsorted, "http://a.com/"); err != nil || out != "present\thttp://a.com/\tcom,a)/\t1\n" ||
		!strings.Contains(stderr, "normalised on open") {
		t.Fatalf("lookup in an unsorted map: %v\n%s%s", err, out, stderr)
	}
	// A malformed line is an error naming it; --skip-bad skips it.
	bad := filepath.Join(dir, "bad.ukvs")
	if err := os.WriteFile(bad, []byte("com,a)/ 1\ncom,b)/ x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "out.ukvs"))
	_, _, err := runMMCLI(t, "", "compact", bad, filepath.Join(dir, "out.ukvs"))
	if err == nil || !strings.Contains(err.Error(), "bad.ukvs:2") || !strings.Contains(err.Error(), "not a count") {
		t.Fatalf("bad input: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.ukvs")); !os.IsNotExist(err) {
		t.Fatal("output written despite the error")
	}
	_, stderr, err := runMMCLI(t, "", "compact", "--skip-bad", bad, filepath.Join(dir, "out.ukvs"))
	if err != nil || !strings.Contains(stderr, "skipped: ukvs: "+bad+":2") || !strings.Contains(stderr, "1 bad lines skipped") {
		t.Fatalf("skip-bad: %v\n%s", err, stderr)
	}
	if _, _, err := runMMCLI(t, "", "lookup", bad, "http://a.com/"); err == nil || !strings.Contains(err.Error(), "bad.ukvs:2") {
		t.Fatalf("lookup in a map with a bad line: %v", err)
	}
	var ue usageError
	if _, _, err := runMMCLI(t, "", "frobnicate"); !errors.As(err, &ue) {
		t.Fatalf("unknown command: %v", err)
	}
	out, _, err := runMMCLI(t, "", "--help")
	if err != nil || !strings.Contains(out, "generate [-o OUT]") {
		t.Fatalf("help: %v\n%s", err, out)
	}
	// -h prints the usage on stdout and succeeds.
	out, _, err = runMMCLI(t, "", "compact", "-h")
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(out, "Public") || !strings.Contains(out, "-workers") {
		t.Fatalf("compact -h: %v\n%s", err, out)
	}
}
