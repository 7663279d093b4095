package fixity

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

// checkEvidence validates the evidence WARCs of m (read from manifest
// path) with gowarc's strict reader (syntax errors and spec violations
// fail, block and payload digests checked, nothing fixed) and checks that
// every response the manifest references is the record it says, with the
// body its hash says.
func checkEvidence(t testing.TB, m *Manifest, path string) {
	t.Helper()
	if m.Evidence == nil || len(m.Evidence.Files) == 0 {
		t.Fatal("no evidence referenced by the manifest")
	}
	dir := EvidenceDir(m, path)
	for _, ef := range m.Evidence.Files {
		name := filepath.Join(dir, filepath.FromSlash(ef.Name))
		size, sum, err := fileSHA256(name)
		if err != nil || size != ef.Size || sum != ef.SHA256 {
			t.Fatalf("%s: %d bytes sha256 %s (%v), manifest says %d %s", name, size, sum, err, ef.Size, ef.SHA256)
		}
		if n := validateStrict(t, name); n != ef.Records {
			t.Fatalf("%s: %d records, manifest says %d", name, n, ef.Records)
		}
	}
	refs := 0
	for i := range m.Resources {
		res := &m.Resources[i]
		for _, side := range []struct {
			name string
			p    *Response
		}{{CaptureRewritten, res.Rewritten}, {CaptureRaw, res.Raw}} {
			p := side.p
			if p == nil || p.Outcome != OutcomeOK {
				continue
			}
			if p.Evidence == nil {
				t.Fatalf("%s %s: response without an evidence record", side.name, res.URL)
			}
			refs++
			rec, err := ReadEvidence(m, path, side.name, p)
			if err != nil {
				t.Fatal(err)
			}
			if rec.URI != p.FinalURL || rec.Status != p.Status {
				t.Fatalf("%s %s: evidence record is %s status %d, response says %s %d", side.name, res.URL, rec.URI, rec.Status, p.FinalURL, p.Status)
			}
			if p.Body == BodyHashed && sha256Hex(rec.Body) != p.BodyHash.String() {
				t.Fatalf("%s %s: evidence body sha256 %s, manifest body hash %s", side.name, res.URL, sha256Hex(rec.Body), p.BodyHash)
			}
		}
	}
	if refs == 0 {
		t.Fatal("no response references evidence")
	}
}

// validateStrict reads one WARC file with gowarc's strict validation and
// with warcio (which must find no anomaly and agree on every payload
// digest) and returns its record count.
func validateStrict(t testing.TB, path string) int {
	t.Helper()
	n := testenv.StrictWARC(t, path)
	// warcio (lenient, independent of gowarc) must find no anomaly either.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := warcio.NewReader(f, path, warcio.Options{})
	for {
		r, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: warcio: %v", path, err)
		}
		if len(r.Anomalies) > 0 {
			t.Errorf("%s offset %d: warcio anomalies %v", path, r.Offset, r.Anomalies)
		}
		if r.Type == "response" && r.DeclaredPayloadDigest != r.PayloadDigest {
			t.Errorf("%s offset %d: payload digest %s declared, %s computed", path, r.Offset, r.DeclaredPayloadDigest, r.PayloadDigest)
		}
	}
	return n
}

// saveManifest writes m as dir/name.json and returns the path (evidence
// stays where WithEvidence put it; its Dir is made relative to dir).
func saveManifest(t testing.TB, m *Manifest, dir, name string) string {
	t.Helper()
	if m.Evidence != nil && filepath.IsAbs(m.Evidence.Dir) {
		rel, err := filepath.Rel(dir, m.Evidence.Dir)
		if err != nil {
			t.Fatal(err)
		}
		m.Evidence.Dir = filepath.ToSlash(rel)
	}
	p := filepath.Join(dir, name+".json")
	if err := os.WriteFile(p, m.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// stripEvidence removes the evidence references (for testdata, which keeps
// no WARCs).
func stripEvidence(m *Manifest) *Manifest {
	c := m.clone()
	c.Evidence = nil
	for i := range c.Resources {
		for _, p := range []*Response{c.Resources[i].Rewritten, c.Resources[i].Raw} {
			if p != nil {
				p.Evidence = nil
			}
		}
	}
	return c
}

// diffFor returns the byte diff of one side, or nil.
func diffFor(ds []BytesDiff, side string) *BytesDiff {
	for i := range ds {
		if ds[i].Side == side {
			return &ds[i]
		}
	}
	return nil
}
