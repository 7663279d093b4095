package characterize

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

// metaRecord is a metadata record as read back.
type metaRecord struct {
	typ, id, refersTo, uri, warcinfoID, contentType string
	fields                                          [][2]string
}

// readMetadata reads a metadata file with Wayside's reader, checking every
// block digest.
func readMetadata(t *testing.T, path string) []metaRecord {
	t.Helper()
	var block bytes.Buffer
	r, err := warcio.Open(path, warcio.Options{BlockDigest: true, BlockSink: func() io.Writer { block.Reset(); return &block }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []metaRecord
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if rec.BlockDigest != rec.Header("WARC-Block-Digest") || len(rec.Anomalies) > 0 {
			t.Fatalf("%s offset %d: block digest %s, declared %s; anomalies %v", path, rec.Offset, rec.BlockDigest, rec.Header("WARC-Block-Digest"), rec.Anomalies)
		}
		m := metaRecord{typ: rec.Type, id: rec.RecordID, refersTo: rec.Header("WARC-Refers-To"), uri: rec.TargetURI,
			warcinfoID: rec.Header("WARC-Warcinfo-ID"), contentType: rec.ContentType}
		sc := bufio.NewScanner(bytes.NewReader(block.Bytes()))
		for sc.Scan() {
			name, value, ok := strings.Cut(strings.TrimSuffix(sc.Text(), "\r"), ": ")
			if !ok {
				t.Fatalf("%s offset %d: block line %q is not a warc-fields line", path, rec.Offset, sc.Text())
			}
			m.fields = append(m.fields, [2]string{name, value})
		}
		out = append(out, m)
	}
}

func (m metaRecord) field(name string) string {
	for _, f := range m.fields {
		if f[0] == name {
			return f[1]
		}
	}
	return ""
}

// TestWriteMetadata writes the metadata file of every corpus WARC and of
// the generated WARC of nested containers: each is a valid WARC 1.1 file
// (gowarc, strict), holds a warcinfo record and one metadata record per
// characterized response, resource or conversion record, in file order,
// whose WARC-Refers-To is that record's ID and whose block states the
// identification the store holds, nested objects included. The blocks of
// the nested WARC (sizes aside) are pinned in testdata/metadata.txt.
func TestWriteMetadata(t *testing.T) {
	nestedFile := nestedWARC(t)
	files := append(testenv.CorpusWARCs(t), nestedFile)
	st := openStore(t, "", StoreOptions{})
	c := newCharacterizer(t, st, Options{})
	scanAll(t, c, files...)
	out := t.TempDir()
	tool := c.Identifier().Engine().Tool()
	if !strings.HasPrefix(tool, "siegfried 1.11.4; pronom") {
		t.Fatalf("tool %q", tool)
	}
	when := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var pinned strings.Builder
	total := 0
	for _, f := range files {
		name := filepath.Base(f)
		path := filepath.Join(out, MetadataName(name))
		ms, err := WriteMetadata(st, name, path, MetadataOptions{Identifier: tool, Now: func() time.Time { return when }})
		if err != nil {
			t.Fatal(err)
		}
		testenv.StrictWARC(t, path)
		got := readMetadata(t, path)
		if len(got) == 0 || got[0].typ != "warcinfo" || got[0].field("identifier") != tool {
			t.Fatalf("%s: first record %+v, want the warcinfo naming %s", path, got[0], tool)
		}
		var want []Record
		for _, r := range st.Records(name) {
			if !r.IsRevisit() && r.RecordID != "" && r.PUID != "" {
				want = append(want, r)
			}
		}
		if len(got)-1 != len(want) || ms.Records != len(want) {
			t.Fatalf("%s: %d metadata records (stats %+v), want %d", name, len(got)-1, ms, len(want))
		}
		for i, r := range want {
			m := got[i+1]
			nested := 0
			for _, f := range m.fields {
				if f[0] == "nested" {
					nested++
				}
			}
			if m.typ != "metadata" || m.refersTo != r.RecordID || m.uri != r.URI || m.warcinfoID != got[0].id ||
				m.contentType != "application/warc-fields" || m.field("puid") != r.PUID || m.field("format") != r.Name ||
				m.field("size") != fmt.Sprint(r.Size) || nested != len(r.Nested) {
				t.Fatalf("%s: metadata record %d %+v does not state %s offset %d (%s %s, %d nested)", name, i, m, name, r.Offset, r.RecordID, r.PUID, len(r.Nested))
			}
			if f == nestedFile {
				fmt.Fprintf(&pinned, "%s\n", r.URI)
				for _, f := range m.fields {
					// Sizes vary with the random record IDs of the
					// embedded WARC: not pinned (checked above).
					switch f[0] {
					case "size":
						continue
					case "nested":
						p := strings.SplitN(f[1], " ", 3)
						f[1] = p[0] + " * " + p[2]
					}
					fmt.Fprintf(&pinned, "  %s: %s\n", f[0], f[1])
				}
			}
		}
		total += ms.Records
	}
	if total < 150 {
		t.Fatalf("only %d metadata records written", total)
	}
	golden(t, "metadata.txt", pinned.String())
}

// A metadata file that cannot be written leaves no partial file and names
// the WARC file; one written again replaces the earlier one whole.
func TestWriteMetadataFailureAndRewrite(t *testing.T) {
	st := openStore(t, "", StoreOptions{})
	f := nestedWARC(t)
	scanAll(t, newCharacterizer(t, st, Options{}), f)
	name := filepath.Base(f)
	dir := t.TempDir()
	if _, err := WriteMetadata(st, name, filepath.Join(dir, "missing", MetadataName(name)), MetadataOptions{}); err == nil || !strings.Contains(err.Error(), name) {
		t.Fatalf("write into a missing directory: %v, want an error naming %s", err, name)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
	path := filepath.Join(dir, MetadataName(name))
	if err := os.WriteFile(path, []byte("an older, longer file that must be replaced entirely"), 0o644); err != nil {
		t.Fatal(err)
	}
	ms, err := WriteMetadata(st, name, path, MetadataOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := readMetadata(t, path); len(got) != ms.Records+1 {
		t.Fatalf("rewritten file holds %d records, want %d", len(got), ms.Records+1)
	}
}

func TestMetadataName(t *testing.T) {
	for in, want := range map[string]string{
		"WAYSIDE-1-00000-h.warc.gz": "WAYSIDE-1-00000-h" + MetadataSuffix,
		"dir/a.warc":                "a" + MetadataSuffix,
		"IA-2001.arc.gz":            "IA-2001" + MetadataSuffix,
		"x.arc":                     "x" + MetadataSuffix,
		"odd.bin":                   "odd.bin" + MetadataSuffix,
	} {
		if got := MetadataName(in); got != want {
			t.Errorf("MetadataName(%q) = %q, want %q", in, got, want)
		}
	}
}
