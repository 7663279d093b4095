package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

func autARC(t *testing.T) string {
	t.Helper()
	return filepath.Join(testenv.SharedDir(t), "corpus", "arc", "aut-example.arc.gz")
}

// TestConvertCommand: arc2warc converts, verify proves it (exit 0), and a
// conversion missing a record fails verify with a per-record line (exit 1).
func TestConvertCommand(t *testing.T) {
	arc := autARC(t)
	dir := t.TempDir()
	out, stderr, err := runCDXJCmd(t, "convert", "arc2warc", "--json", "-o", dir, arc)
	if err != nil {
		t.Fatalf("arc2warc: %v\n%s", err, stderr)
	}
	var res struct {
		WARC      string `json:"warc"`
		Records   int    `json:"records"`
		Responses int    `json:"responses"`
		Resources int    `json:"resources"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Records != 300 || res.Responses != 261 || res.Resources != 38 {
		t.Fatalf("arc2warc result %q (%v)", out, err)
	}
	out, _, err = runCDXJCmd(t, "convert", "verify", arc, res.WARC)
	if err != nil || !strings.Contains(out, "300 ARC records, 300 WARC records, 300 matched, 0 missing, 0 extra, 0 damaged") ||
		!strings.Contains(out, "second framing of the ARC: 300 records, 0 disagreements, 0 not converted") {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	// Again without --overwrite: the existing output is kept, exit 1.
	if _, stderr, err := runCDXJCmd(t, "convert", "arc2warc", "-q", "-o", dir, arc); err == nil || !strings.Contains(err.Error(), "already exists (give --overwrite") {
		t.Fatalf("second conversion: %v\n%s", err, stderr)
	}
	// The conversion of another ARC is not this ARC's conversion.
	small := filepath.Join(testenv.SharedDir(t), "corpus", "arc", "warcio-example.arc.gz")
	out, _, err = runCDXJCmd(t, "convert", "verify", small, res.WARC)
	if err == nil || report(&strings.Builder{}, err, false) != exitFailure || !strings.Contains(out, "MISSING  "+small+" record offset 171 arc http://example.com/ 20140216050221") {
		t.Fatalf("verify of a foreign WARC: %v\n%s", err, out)
	}
	// Usage errors exit 2.
	for _, args := range [][]string{{"convert"}, {"convert", "arc2warc"}, {"convert", "verify", arc}, {"convert", "arc2warc", "--warc-version", "0.9", arc}} {
		_, _, err := runCDXJCmd(t, args...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: want a usage error, got %v", args, err)
		}
	}
}

// TestARCAcceptedByCommands: cdxj, index import and mementomap generate
// take an ARC file as they take a WARC file, with no option, and give for
// it what they give for its conversion (MementoMaps identical; the same
// originals imported).
func TestARCAcceptedByCommands(t *testing.T) {
	arc := autARC(t)
	dir := t.TempDir()
	if _, stderr, err := runCDXJCmd(t, "convert", "arc2warc", "-q", "-o", dir, arc); err != nil {
		t.Fatalf("arc2warc: %v\n%s", err, stderr)
	}
	warc := filepath.Join(dir, "aut-example.warc.gz")

	want, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "cdxj", "testdata", "corpus-arc.cdxj"))
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runCDXJCmd(t, "cdxj", "-q", arc)
	if err != nil {
		t.Fatalf("cdxj: %v\n%s", err, stderr)
	}
	var wantAut strings.Builder
	for _, l := range strings.SplitAfter(string(want), "\n") {
		if strings.Contains(l, `"filename": "aut-example.arc.gz"`) {
			wantAut.WriteString(l)
		}
	}
	if out != wantAut.String() {
		t.Errorf("wayside cdxj on the ARC differs from cdxj/testdata/corpus-arc.cdxj")
	}

	maps := map[string]string{}
	for _, in := range []string{arc, warc} {
		m := filepath.Join(dir, filepath.Base(in)+".ukvs")
		if _, stderr, err := runCDXJCmd(t, "mementomap", "generate", "-o", m, in); err != nil {
			t.Fatalf("mementomap generate %s: %v\n%s", in, err, stderr)
		}
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(l, "!meta") {
				keep = append(keep, l)
			}
		}
		maps[in] = strings.Join(keep, "\n")
	}
	if maps[arc] != maps[warc] || strings.Count(maps[arc], "\n") < 200 {
		t.Errorf("MementoMaps of the ARC and its conversion differ (or are empty):\n%.300s\n---\n%.300s", maps[arc], maps[warc])
	}

	sums := map[string]string{}
	for _, in := range []string{arc, warc} {
		out, stderr, err := runCDXJCmd(t, "index", "import", "--quiet", "--index", filepath.Join(dir, filepath.Base(in)+".idx"), in)
		if err != nil {
			t.Fatalf("index import %s: %v\n%s", in, err, stderr)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "originals added:") {
				sums[in] = l
			}
		}
	}
	if sums[arc] == "" || sums[arc] != sums[warc] || strings.HasSuffix(sums[arc], " 0") {
		t.Errorf("index import: ARC %q, its conversion %q", sums[arc], sums[warc])
	}
}
