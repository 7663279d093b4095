package wacz

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/internal/testenv"
)

func testKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// corpusInputs returns WARC files of the shared corpus that read without
// problems (two tools' output, revisits included).
func corpusInputs(t testing.TB) []string {
	var out []string
	for _, w := range testenv.CorpusWARCs(t) {
		switch filepath.Base(w) {
		case "pywb-iana.warc.gz", "warcio-example.warc.gz", "20141124-heritrix-server-not-modified.warc.gz",
			"20130729-heritrix-revisit-with-http-headers.warc.gz", "npmwarc-CC-MAIN-20140820021334-00006.warc":
			out = append(out, w)
		}
	}
	if len(out) != 5 {
		t.Fatalf("want 5 corpus WARCs, got %v", out)
	}
	return out
}

// corpusNamed returns the corpus WARCs of the given names, in that order.
func corpusNamed(t testing.TB, names ...string) []string {
	dir := filepath.Dir(corpusInputs(t)[0])
	var out []string
	for _, n := range names {
		out = append(out, filepath.Join(dir, n))
	}
	return out
}

func create(t testing.TB, inputs []string, opts Options) (string, *Result) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "test.wacz")
	res, err := Create(context.Background(), out, inputs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return out, res
}

func mustVerify(t testing.TB, p string, opts VerifyOptions) *Report {
	t.Helper()
	rep, err := Verify(context.Background(), p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verify %s: %v", p, rep.Problems)
	}
	return rep
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// TestCreateCorpus packages real WARCs of other tools and checks the
// layout with archive/zip: WARCs stored byte for byte, every member
// stored with its sizes in the local header, the datapackage hashes, the
// index sorted, and Verify passing with the signature.
func TestCreateCorpus(t *testing.T) {
	in := corpusInputs(t)
	key := testKey(t)
	extra := filepath.Join(t.TempDir(), "map.ukvs")
	os.WriteFile(extra, []byte("!meta {}\ncom,example)/ 1/1\n"), 0o644)
	out, res := create(t, in, Options{Key: key, Software: "test", Title: "T", Extras: []Extra{{Name: "mementomap.ukvs", File: extra}}})
	if res.WARCs != 5 || res.IndexLines == 0 || res.Pages == 0 || !res.Signed || len(res.Problems) != 0 {
		t.Fatalf("result %+v", res)
	}
	members, files := testenv.ReadZip(t, out)
	for _, f := range files {
		if f.Method != zip.Store || f.Flags&0x8 != 0 {
			t.Errorf("%s: method %d flags %#x, want stored with sizes in the local header", f.Name, f.Method, f.Flags)
		}
	}
	for _, w := range in {
		b, _ := os.ReadFile(w)
		if !bytes.Equal(members["archive/"+filepath.Base(w)], b) {
			t.Errorf("archive/%s differs from the input", filepath.Base(w))
		}
	}
	var dp Datapackage
	if err := json.Unmarshal(members[DatapackagePath], &dp); err != nil {
		t.Fatal(err)
	}
	if dp.WACZVersion != "1.1.1" || dp.Profile != "data-package" || dp.MainPageURL == "" {
		t.Errorf("datapackage %+v", dp)
	}
	if len(dp.Resources) != len(members)-2 {
		t.Errorf("%d resources for %d members", len(dp.Resources), len(members))
	}
	for _, r := range dp.Resources {
		b, ok := members[r.Path]
		if !ok || "sha256:"+sha(b) != r.Hash || int64(len(b)) != r.Bytes || r.Name != filepath.Base(r.Path) {
			t.Errorf("resource %+v does not describe its member", r)
		}
	}
	var dg DigestFile
	json.Unmarshal(members[DatapackageDigestPath], &dg)
	if dg.Hash != "sha256:"+sha(members[DatapackagePath]) || dg.SignedData == nil {
		t.Fatalf("digest %+v", dg)
	}
	lines := strings.Split(strings.TrimSuffix(string(members[IndexCDXJPath]), "\n"), "\n")
	if len(lines) != res.IndexLines {
		t.Errorf("%d lines, result says %d", len(lines), res.IndexLines)
	}
	for i := 1; i < len(lines); i++ {
		if lines[i-1] >= lines[i] {
			t.Fatalf("index not sorted at line %d", i+1)
		}
	}
	pub, _ := PublicKey(key)
	rep := mustVerify(t, out, VerifyOptions{TrustedKeys: []string{pub}})
	if rep.IndexLines != res.IndexLines || rep.Records != res.IndexLines || rep.Pages != res.Pages+res.ExtraPages || rep.PublicKey != pub {
		t.Errorf("report %+v, result %+v", rep, res)
	}
	if _, ok := members["wayside/mementomap.ukvs"]; !ok {
		t.Error("extra resource missing")
	}
}

// TestZipNum forces a ZipNum index of small blocks with a spilling sorter:
// the blocks hold exactly the plain index's lines, the idx names each
// block's first key, offset, length and sha256, and Verify passes.
func TestZipNum(t *testing.T) {
	in := corpusInputs(t)
	plain, _ := create(t, in, Options{Created: time.Unix(1e9, 0)})
	zn, res := create(t, in, Options{Created: time.Unix(1e9, 0), ZipNumThreshold: 1, ZipNumLines: 7, SortMemory: 4096})
	if !res.ZipNum {
		t.Fatal("no ZipNum index")
	}
	pm, _ := testenv.ReadZip(t, plain)
	zm, _ := testenv.ReadZip(t, zn)
	if _, ok := zm[IndexCDXJPath]; ok {
		t.Fatal("both indexes written")
	}
	idx := strings.Split(strings.TrimSuffix(string(zm[IndexIDXPath]), "\n"), "\n")
	if idx[0] != ZipNumMeta {
		t.Fatalf("idx starts %q", idx[0])
	}
	gz := zm[IndexZipNumPath]
	var all bytes.Buffer
	var off int64
	for _, l := range idx[1:] {
		i := strings.Index(l, " {")
		var b IDXBlock
		if err := json.Unmarshal([]byte(l[i+1:]), &b); err != nil {
			t.Fatal(err)
		}
		if b.Offset != off || b.Filename != "index.cdx.gz" || b.Digest != "sha256:"+sha(gz[b.Offset:b.Offset+b.Length]) {
			t.Fatalf("block %s", l)
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz[b.Offset : b.Offset+b.Length]))
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := io.ReadAll(zr)
		if !strings.HasPrefix(string(blk), l[:i]+" ") || bytes.Count(blk, []byte("\n")) > 7 {
			t.Fatalf("block of %q starts %q", l[:i], blk[:40])
		}
		all.Write(blk)
		off += b.Length
	}
	if off != int64(len(gz)) || !bytes.Equal(all.Bytes(), pm[IndexCDXJPath]) {
		t.Fatal("ZipNum blocks do not hold the plain index")
	}
	mustVerify(t, zn, VerifyOptions{AllowUnsigned: true})
}

// memberSpan returns where member name's data lies in the zip file.
func memberSpan(t testing.TB, p, name string) (int64, int64) {
	zr, err := zip.OpenReader(p)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.Name == name {
			off, err := f.DataOffset()
			if err != nil {
				t.Fatal(err)
			}
			return off, int64(f.CompressedSize64)
		}
	}
	t.Fatalf("no member %s", name)
	return 0, 0
}

func flipByte(t testing.TB, src string, at int64) string {
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	b[at] ^= 0x20
	dst := filepath.Join(t.TempDir(), "flipped.wacz")
	os.WriteFile(dst, b, 0o644)
	return dst
}

func problemsNaming(rep *Report, member string) bool {
	for _, p := range rep.Problems {
		if strings.Contains(p.Member, member) || strings.Contains(p.Msg, member) {
			return true
		}
	}
	return false
}

// TestVerifyCatchesFlippedByte flips one byte (start, middle and end) in
// every kind of member: Verify must fail and name the member.
func TestVerifyCatchesFlippedByte(t *testing.T) {
	in := corpusNamed(t, "pywb-iana.warc.gz", "warcio-example.warc.gz")
	extra := filepath.Join(t.TempDir(), "fixity.json")
	os.WriteFile(extra, []byte(`{"pages":[]}`), 0o644)
	plain, _ := create(t, in, Options{Key: testKey(t), Extras: []Extra{{Name: "fixity-manifest.json", File: extra}}})
	zn, _ := create(t, in, Options{Key: testKey(t), ZipNumThreshold: 1, ZipNumLines: 20})
	cases := map[string][]string{
		plain: {"archive/pywb-iana.warc.gz", "archive/warcio-example.warc.gz", IndexCDXJPath, PagesPath, DatapackagePath, DatapackageDigestPath, "wayside/fixity-manifest.json"},
		zn:    {IndexZipNumPath, IndexIDXPath},
	}
	for src, members := range cases {
		mustVerify(t, src, VerifyOptions{})
		for _, m := range members {
			off, n := memberSpan(t, src, m)
			for _, at := range []int64{off, off + n/2, off + n - 1} {
				rep, err := Verify(context.Background(), flipByte(t, src, at), VerifyOptions{})
				if err != nil {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("%s byte %d: error %v does not name the member", m, at-off, err)
					}
					continue
				}
				if rep.OK() || !problemsNaming(rep, m) {
					t.Errorf("%s byte %d flipped: problems %v do not name it", m, at-off, rep.Problems)
				}
			}
		}
	}
}

// rewrite copies the zip src to a new file with some members replaced.
func rewrite(t testing.TB, src string, replace map[string][]byte) string {
	t.Helper()
	members, files := testenv.ReadZip(t, src)
	dst := filepath.Join(t.TempDir(), "rewritten.wacz")
	f, _ := os.Create(dst)
	zw := zip.NewWriter(f)
	for _, zf := range files {
		b := members[zf.Name]
		if r, ok := replace[zf.Name]; ok {
			b = r
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: zf.Name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	for name, b := range replace {
		if _, ok := members[name]; !ok {
			w, _ := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
			w.Write(b)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return dst
}

// TestForgedSignature: a datapackage changed consistently (new resource
// hash, new digest) keeps the old signature, which then fails; a bad
// signature fails; a valid signature by another key passes only when no
// key is trusted, and fails against the trusted key.
func TestForgedSignature(t *testing.T) {
	key := testKey(t)
	pub, _ := PublicKey(key)
	src, _ := create(t, corpusNamed(t, "pywb-iana.warc.gz"), Options{Key: key})
	members, _ := testenv.ReadZip(t, src)
	var dp Datapackage
	json.Unmarshal(members[DatapackagePath], &dp)
	var dg DigestFile
	json.Unmarshal(members[DatapackageDigestPath], &dg)

	// Pages replaced, datapackage and digest updated, old signature kept.
	newPages := []byte(`{"format":"json-pages-1.0","id":"pages"}` + "\n")
	for i := range dp.Resources {
		if dp.Resources[i].Path == PagesPath {
			dp.Resources[i].Hash, dp.Resources[i].Bytes = "sha256:"+sha(newPages), int64(len(newPages))
		}
	}
	dpb, _ := json.Marshal(dp)
	forged := dg
	forged.Hash = "sha256:" + sha(dpb)
	sd := *dg.SignedData
	sd.Hash = forged.Hash
	forged.SignedData = &sd
	fb, _ := json.Marshal(forged)
	rep, err := Verify(context.Background(), rewrite(t, src, map[string][]byte{PagesPath: newPages, DatapackagePath: dpb, DatapackageDigestPath: fb}), VerifyOptions{})
	if err != nil || rep.OK() || !problemsNaming(rep, DatapackageDigestPath) || !strings.Contains(rep.Problems[0].Msg, "signature") {
		t.Errorf("kept signature over a forged datapackage: %v %v", err, rep)
	}

	// A signature from another key over the forged datapackage.
	other, _ := Sign(testKey(t), forged.Hash, time.Now(), "forger")
	forged.SignedData = other
	fb, _ = json.Marshal(forged)
	resigned := rewrite(t, src, map[string][]byte{PagesPath: newPages, DatapackagePath: dpb, DatapackageDigestPath: fb})
	mustVerify(t, resigned, VerifyOptions{}) // anonymous: valid as such
	rep, err = Verify(context.Background(), resigned, VerifyOptions{TrustedKeys: []string{pub}})
	if err != nil || rep.OK() || !strings.Contains(rep.Problems[0].Msg, "not a trusted key") {
		t.Errorf("re-signed by another key passed as trusted: %v %v", err, rep)
	}

	// Signature bytes altered.
	bad := dg
	sd2 := *dg.SignedData
	sig := []byte(sd2.Signature)
	sig[10] = map[bool]byte{true: 'B', false: 'A'}[sig[10] == 'A']
	sd2.Signature = string(sig)
	bad.SignedData = &sd2
	bb, _ := json.Marshal(bad)
	rep, err = Verify(context.Background(), rewrite(t, src, map[string][]byte{DatapackageDigestPath: bb}), VerifyOptions{})
	if err != nil || rep.OK() || !strings.Contains(rep.Problems[0].Msg, "signature") {
		t.Errorf("altered signature: %v %v", err, rep)
	}

	// Unsigned: a problem unless allowed.
	unsigned := dg
	unsigned.SignedData = nil
	ub, _ := json.Marshal(unsigned)
	u := rewrite(t, src, map[string][]byte{DatapackageDigestPath: ub})
	if rep, _ := Verify(context.Background(), u, VerifyOptions{}); rep.OK() {
		t.Error("unsigned WACZ passed")
	}
	mustVerify(t, u, VerifyOptions{AllowUnsigned: true})
}

// TestVerifyIndexAndPages: an index line pointing at the wrong offset or
// naming another digest, a page missing from the index, a member not in
// the datapackage are each caught.
func TestVerifyIndexAndPages(t *testing.T) {
	src, _ := create(t, corpusNamed(t, "pywb-iana.warc.gz"), Options{})
	members, _ := testenv.ReadZip(t, src)
	idx := string(members[IndexCDXJPath])
	lines := strings.SplitAfter(idx, "\n")
	// The digest of the first line replaced by another line's.
	l0, l1 := lines[0], lines[len(lines)-2]
	d0 := l0[strings.Index(l0, `"digest": "`)+11:]
	d0 = d0[:strings.IndexByte(d0, '"')]
	d1 := l1[strings.Index(l1, `"digest": "`)+11:]
	d1 = d1[:strings.IndexByte(d1, '"')]
	if d0 == d1 {
		t.Fatal("test needs two digests")
	}
	bad := strings.Replace(idx, d0, d1, 1)
	rep, _ := Verify(context.Background(), rewrite(t, src, map[string][]byte{IndexCDXJPath: []byte(bad)}), VerifyOptions{AllowUnsigned: true})
	if rep.OK() || !strings.Contains(rep.Problems[len(rep.Problems)-1].Member+rep.Problems[0].Member, IndexCDXJPath) {
		t.Errorf("wrong digest: %v", rep.Problems)
	}
	// A page that is not in the index.
	pages := string(members[PagesPath]) + `{"id":"x","url":"http://nowhere.example/","ts":"2020-01-01T00:00:00Z"}` + "\n"
	rep, _ = Verify(context.Background(), rewrite(t, src, map[string][]byte{PagesPath: []byte(pages)}), VerifyOptions{AllowUnsigned: true})
	if !problemsNaming(rep, "nowhere.example") {
		t.Errorf("missing page: %v", rep.Problems)
	}
	// A member not in datapackage.json.
	rep, _ = Verify(context.Background(), rewrite(t, src, map[string][]byte{"archive/extra.warc": []byte("x")}), VerifyOptions{AllowUnsigned: true})
	if !problemsNaming(rep, "archive/extra.warc") {
		t.Errorf("unlisted member: %v", rep.Problems)
	}
}

// writeZip writes members (in order) as a zip with the given method.
func writeZip(t testing.TB, names []string, data [][]byte, method uint16) string {
	p := filepath.Join(t.TempDir(), "bad.wacz")
	f, _ := os.Create(p)
	zw := zip.NewWriter(f)
	for i, n := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data[i])
	}
	zw.Close()
	f.Close()
	return p
}

// TestBadInput: a truncated file, unsafe member names, a zip bomb and a
// hash mismatch each give an error naming the member, and extraction
// writes nothing outside its directory.
func TestBadInput(t *testing.T) {
	src, _ := create(t, corpusNamed(t, "pywb-iana.warc.gz", "warcio-example.warc.gz"), Options{})
	b, _ := os.ReadFile(src)
	off, n := memberSpan(t, src, "archive/warcio-example.warc.gz")
	cut := filepath.Join(t.TempDir(), "cut.wacz")
	os.WriteFile(cut, b[:off+n/2], 0o644)
	_, err := Verify(context.Background(), cut, VerifyOptions{})
	if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "archive/warcio-example.warc.gz") {
		t.Errorf("truncated: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none.wacz"), Limits{}); err == nil {
		t.Error("missing file opened")
	}

	for _, name := range []string{"../evil.warc.gz", "archive/../../evil.warc.gz", "/etc/evil.warc", `archive\..\evil.warc`, "a/b/c/d/e/f/g/h/i/j.warc"} {
		p := writeZip(t, []string{"archive/ok.warc", name}, [][]byte{[]byte("WARC/1.0\r\n"), []byte("x")}, zip.Store)
		work := t.TempDir()
		dir := filepath.Join(work, "inner")
		os.Mkdir(dir, 0o755)
		_, err := ExtractWARCs(context.Background(), p, dir, Limits{})
		if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), strconv.Quote(name)) {
			t.Errorf("member %q: %v", name, err)
		}
		if ents, _ := os.ReadDir(work); len(ents) != 1 {
			t.Errorf("member %q: extraction wrote %v", name, ents)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("member %q: extraction went ahead: %v", name, ents)
		}
	}

	bomb := writeZip(t, []string{"archive/bomb.warc"}, [][]byte{make([]byte, 64<<20)}, zip.Deflate)
	_, err = Verify(context.Background(), bomb, VerifyOptions{})
	if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "archive/bomb.warc") || !strings.Contains(err.Error(), "zip bomb") {
		t.Errorf("bomb: %v", err)
	}
	if _, err := ExtractWARCs(context.Background(), bomb, t.TempDir(), Limits{}); !errors.Is(err, ErrUnsafe) {
		t.Errorf("bomb extracted: %v", err)
	}

	members, _ := testenv.ReadZip(t, src)
	var dp Datapackage
	json.Unmarshal(members[DatapackagePath], &dp)
	dp.Resources[0].Hash = "sha256:" + strings.Repeat("0", 64)
	dpb, _ := json.Marshal(dp)
	rep, err := Verify(context.Background(), rewrite(t, src, map[string][]byte{DatapackagePath: dpb}), VerifyOptions{AllowUnsigned: true})
	if err != nil || !problemsNaming(rep, dp.Resources[0].Path) || !problemsNaming(rep, DatapackagePath) {
		t.Errorf("hash mismatch: %v %v", err, rep.Problems)
	}
}

// TestExtractWARCs gives back the WARC files byte for byte.
func TestExtractWARCs(t *testing.T) {
	in := corpusNamed(t, "pywb-iana.warc.gz", "warcio-example.warc.gz")
	src, _ := create(t, in, Options{})
	dir := t.TempDir()
	got, err := ExtractWARCs(context.Background(), src, dir, Limits{})
	if err != nil || len(got) != 2 {
		t.Fatal(got, err)
	}
	for i, p := range got {
		a, _ := os.ReadFile(p)
		b, _ := os.ReadFile(in[i])
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s", p, in[i])
		}
	}
}

// TestKeyKept: LoadOrCreateKey creates a 0600 key once and reads it back.
func TestKeyKept(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cfg", "wayside", KeyFileName)
	k1, created, err := LoadOrCreateKey(p)
	if err != nil || !created {
		t.Fatal(err, created)
	}
	fi, _ := os.Stat(p)
	di, _ := os.Stat(filepath.Dir(p))
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Errorf("modes %v %v", fi.Mode(), di.Mode())
	}
	k2, created, err := LoadOrCreateKey(p)
	if err != nil || created || !k1.Equal(k2) {
		t.Fatal("key not kept", err, created)
	}
}

// TestTitle reads titles through content encodings.
func TestTitle(t *testing.T) {
	doc := []byte("<html><head><title> A  \n page</title></head><body><title>no</title>")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(doc)
	zw.Close()
	if got := Title(doc, ""); got != "A page" {
		t.Errorf("plain: %q", got)
	}
	if got := Title(gz.Bytes(), "gzip"); got != "A page" {
		t.Errorf("gzip: %q", got)
	}
	if got := Title([]byte("<html><body><title>x</title>"), ""); got != "" {
		t.Errorf("title in body: %q", got)
	}
}

// TestVerifyCatchesLocalHeaderChange: a changed byte in a member's local
// header (its name, its CRC-32) or bytes inserted between members are
// named, though archive/zip reads only the central directory.
func TestVerifyCatchesLocalHeaderChange(t *testing.T) {
	src, _ := create(t, corpusNamed(t, "warcio-example.warc.gz"), Options{})
	const m = "archive/warcio-example.warc.gz"
	off, _ := memberSpan(t, src, m)
	hdr := off - 30 - int64(len(m)) // no extra field
	for name, at := range map[string]int64{"name": hdr + 30 + 3, "crc": hdr + 14} {
		_, err := Verify(context.Background(), flipByte(t, src, at), VerifyOptions{AllowUnsigned: true})
		if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), m) {
			t.Errorf("%s byte flipped: %v", name, err)
		}
	}
	b, _ := os.ReadFile(src)
	ioff, _ := memberSpan(t, src, IndexCDXJPath)
	ins := ioff - 30 - int64(len(IndexCDXJPath))
	grown := append(append(append([]byte(nil), b[:ins]...), "junk"...), b[ins:]...)
	p := filepath.Join(t.TempDir(), "grown.wacz")
	os.WriteFile(p, grown, 0o644)
	if _, err := Verify(context.Background(), p, VerifyOptions{AllowUnsigned: true}); err == nil {
		t.Error("bytes inserted between members passed")
	}
}
