package main

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/internal/framescan"
	"github.com/wayside-archive/wayside/internal/warcgen"
)

// outRec is a record a command says it produced: its URI and, where the
// command's output names them, its stored offset and length (-1: not
// named).
type outRec struct {
	uri         string
	off, length int64
}

// acctCmd is a reading command under the accounting property.
type acctCmd struct {
	name      string
	warc, arc bool // input kinds it reads
	// locates: the command needs each record's own gzip member (an index
	// pointing at it); a record sharing a member with others may instead
	// be named, by its member's offset, as one it cannot locate.
	locates bool
	// lengths: the output gives each record's stored offset and length.
	lengths bool
	// exitsZero: the command goes on past damage under its tolerating
	// flag (exit 0), naming each stretch and counting them in its summary.
	exitsZero bool
	run       func(t *testing.T, dir, in string) (out []outRec, stderr string, err error)
}

// cdxjRecs reads the records of CDXJ lines (url, offset, length).
func cdxjRecs(t *testing.T, text string) []outRec {
	t.Helper()
	var out []outRec
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		l, err := cdxj.Parse(line)
		if err != nil {
			t.Fatalf("CDXJ line %q: %v", line, err)
		}
		out = append(out, outRec{l.URL, l.Offset, l.Length})
	}
	return out
}

// scannedRecs reads the records of the WARC files in dir with the second
// framing.
func scannedRecs(t *testing.T, dir string) []outRec {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	var out []outRec
	for _, name := range names {
		if fi, err := os.Stat(name); err != nil || !fi.Mode().IsRegular() || strings.HasSuffix(name, ".cdxj") {
			continue
		}
		res, err := framescan.File(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Records {
			out = append(out, outRec{r.URI, -1, -1})
		}
	}
	return out
}

var accountingCmds = []acctCmd{
	{name: "cdxj", warc: true, arc: true, locates: true, lengths: true, run: func(t *testing.T, dir, in string) ([]outRec, string, error) {
		stdout, stderr, err := runCDXJCmd(t, "cdxj", "-q", in)
		return cdxjRecs(t, stdout), stderr, err
	}},
	{name: "index import", warc: true, arc: true, locates: true, lengths: true, run: func(t *testing.T, dir, in string) ([]outRec, string, error) {
		ix := filepath.Join(dir, "index")
		_, stderr, err := runCDXJCmd(t, "index", "import", "-q", "--index", ix, in)
		exp, stderr2, err2 := runCDXJCmd(t, "index", "export", "--index", ix, "--captures", "-")
		if err2 != nil {
			t.Fatalf("index export: %v\n%s", err2, stderr2)
		}
		return cdxjRecs(t, exp), stderr, err
	}},
	{name: "mementomap generate --skip-bad", warc: true, arc: true, exitsZero: true, run: func(t *testing.T, dir, in string) ([]outRec, string, error) {
		m := filepath.Join(dir, "map.ukvs")
		_, stderr, err := runCDXJCmd(t, "mementomap", "generate", "-q", "--skip-bad", "-o", m, in)
		b, _ := os.ReadFile(m)
		var out []outRec
		for _, line := range strings.Split(string(b), "\n") {
			// keys are SURTs: org,example)/N
			if k, ok := strings.CutPrefix(line, "org,example)/"); ok {
				out = append(out, outRec{"http://example.org/" + strings.Fields(k)[0], -1, -1})
			}
		}
		return out, stderr, err
	}},
	{name: "characterize", warc: true, arc: true, locates: true, run: func(t *testing.T, dir, in string) ([]outRec, string, error) {
		stdout, stderr, err := runCDXJCmd(t, "characterize", "-q", "--json", "--records", "--store", filepath.Join(dir, "store"), in)
		var files []struct {
			Records []struct {
				URI    string
				Offset int64
			}
		}
		if jerr := json.Unmarshal([]byte(stdout), &files); jerr != nil {
			t.Fatalf("characterize --json: %v\n%s\n%s", jerr, stdout, stderr)
		}
		var out []outRec
		for _, f := range files {
			for _, r := range f.Records {
				out = append(out, outRec{r.URI, r.Offset, -1})
			}
		}
		return out, stderr, err
	}},
	{name: "dedup run", warc: true, run: func(t *testing.T, dir, in string) ([]outRec, string, error) {
		o := filepath.Join(dir, "out")
		_, stderr, err := runCDXJCmd(t, "dedup", "run", "-q", "--min-size", "1", "-o", o, in)
		return scannedRecs(t, o), stderr, err
	}},
	{name: "convert arc2warc", arc: true, run: func(t *testing.T, dir, in string) ([]outRec, string, error) {
		o := filepath.Join(dir, "out")
		_, stderr, err := runCDXJCmd(t, "convert", "arc2warc", "-q", "-o", o, in)
		return scannedRecs(t, o), stderr, err
	}},
}

// TestReadingCommandsAccountProperty: random valid WARC and ARC files —
// one gzip member per record, members holding several records, one gzip
// stream, uncompressed — with random damage (internal/warcgen), read by
// every reading command. For each command and file: every record no
// damage touched that the second framing (internal/framescan, not
// warcio) finds is in the command's output, or — for a command that must
// locate records by their own gzip member — named by file and member
// offset as one it cannot locate; every damaged record is in the output
// or named by an offset inside it; nothing is output that the file does
// not hold; where the output locates records (CDXJ, the index), every
// non-blank stored byte outside the records output lies in a record
// named by file and offset (records out + named spans = the file); and
// the command exits 1 exactly when it named something (mementomap
// generate under --skip-bad: 0, with the damage counted in its summary).
//
// Fixed seed; WAYSIDE_PROPERTY_N sets the files per command (default 8).
func TestReadingCommandsAccountProperty(t *testing.T) {
	n := 8
	if v, err := strconv.Atoi(os.Getenv("WAYSIDE_PROPERTY_N")); err == nil && v > 0 {
		n = v
	}
	layouts := []string{"plain", "member", "multi", "stream"}
	for _, c := range accountingCmds {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			rng := rand.New(rand.NewSource(21))
			for it := range n {
				arc := c.arc && (!c.warc || it%2 == 1)
				layout := layouts[it/2%len(layouts)]
				if !c.warc {
					layout = layouts[it%len(layouts)]
				}
				f := warcgen.Case(rng, arc, layout, 3+rng.Intn(10), it%4 != 0)
				dir := t.TempDir()
				base := fmt.Sprintf("gen%d.bin", it) // told by content, not by name
				if c.name == "convert arc2warc" {
					base = fmt.Sprintf("gen%d.arc.gz", it)
				}
				in := filepath.Join(dir, base)
				if err := os.WriteFile(in, f.Data, 0o644); err != nil {
					t.Fatal(err)
				}
				out, stderr, err := c.run(t, dir, in)
				warcgen.CheckReading(t, warcgen.Reader{Name: c.name, Locates: c.locates, Lengths: c.lengths, GoesOn: c.exitsZero}, f, filepath.Base(in), toOutputs(out), warcgen.NamedOffsets(stderr, filepath.Base(in)), err != nil)
				if t.Failed() {
					if d := os.Getenv("WAYSIDE_PROPERTY_KEEP"); d != "" {
						os.WriteFile(filepath.Join(d, base), f.Data, 0o644)
					}
					t.Logf("file %s (%s, arc %v, %d bytes), stderr:\n%s", base, layout, arc, len(f.Data), stderr)
					return
				}
			}
		})
	}
}

func toOutputs(out []outRec) []warcgen.Output {
	var o []warcgen.Output
	for _, r := range out {
		o = append(o, warcgen.Output{URI: r.uri, Off: r.off, Length: r.length})
	}
	return o
}
