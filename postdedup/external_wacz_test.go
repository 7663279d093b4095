package postdedup

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/dedupindex"
	_ "github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

// TestCheckExternalWACZMember: validate reads an original in another
// collection back when it lives in a WARC file stored in a WACZ
// ("c.wacz#NAME", as ingest indexes it), by range through the zip; an
// original whose record ID does not match what is stored there fails.
func TestCheckExternalWACZMember(t *testing.T) {
	dir, recs := waczOfCorpus(t)
	for _, rec := range recs {
		o := Original{RecordID: rec.RecordID, File: "c.wacz#pdf.warc.gz", Offset: rec.Offset, Length: rec.Length, Digest: canonical(rec.PayloadDigest), External: true}
		var st ValidateStats
		checkExternal(context.Background(), o, []string{dir}, &st)
		if st.Failed != 0 || st.External != 1 {
			t.Fatalf("offset %d: %+v, want the original found in the WACZ", rec.Offset, st)
		}
		o.RecordID = "<urn:uuid:other>"
		st = ValidateStats{}
		checkExternal(context.Background(), o, []string{dir}, &st)
		if st.Failed != 1 {
			t.Fatalf("offset %d: a wrong record ID passed: %+v", rec.Offset, st)
		}
	}
}

// TestResolveExternalWACZMember: Resolve uses an original of another
// collection that the index locates in a WARC file stored in a WACZ
// (c.wacz#NAME): it is opened by range through the zip and verified.
func TestResolveExternalWACZMember(t *testing.T) {
	ctx := context.Background()
	dir, recs := waczOfCorpus(t)
	idx, err := dedupindex.OpenURL(ctx, "pebble://"+t.TempDir(), dedupindex.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	first := map[string]string{} // digest → the record ID indexed for it (the first)
	for _, rec := range recs {
		if first[canonical(rec.PayloadDigest)] == "" {
			first[canonical(rec.PayloadDigest)] = rec.RecordID
		}
		o := dedupindex.Original{Digest: canonical(rec.PayloadDigest), TargetURI: rec.TargetURI, Date: rec.Date, RecordID: rec.RecordID,
			File: "c.wacz#pdf.warc.gz", Offset: rec.Offset, Length: rec.Length}
		if _, err := idx.Put(ctx, dedupindex.Key{Scope: dedupindex.DefaultScope, Digest: o.Digest}, o); err != nil {
			t.Fatal(err)
		}
	}
	r := &resolver{opts: ResolveOptions{Index: idx, Scope: dedupindex.DefaultScope, OriginalDirs: []string{dir}}, inputs: map[string]bool{}}
	r.locs = warcfile.NewLocations(r.opts.OriginalDirs)
	defer func() {
		for _, f := range r.externals {
			f.Close()
		}
		r.locs.Close()
	}()
	for _, rec := range recs {
		ref, err := r.external(ctx, &Entry{Capture: wayside.Capture{Digest: rec.PayloadDigest, URI: rec.TargetURI}})
		if err != nil {
			t.Fatal(err)
		}
		if ref == nil || ref.orig.RecordID != first[canonical(rec.PayloadDigest)] || ref.orig.File != "c.wacz#pdf.warc.gz" {
			t.Fatalf("offset %d: external original %+v (kept: %v), want %s in the WACZ", rec.Offset, ref, r.st.Kept, first[canonical(rec.PayloadDigest)])
		}
	}
}

// waczOfCorpus writes a WACZ-like zip in a new directory holding a corpus
// WARC file stored as archive/pdf.warc.gz, and returns the directory and
// the file's response records (located in the WARC file).
func waczOfCorpus(t *testing.T) (string, []*warcio.Record) {
	t.Helper()
	src := filepath.Join(testenv.SharedDir(t), "corpus", "warc", "aut-example.pdf.warc.gz")
	dir := t.TempDir()
	testenv.WACZOfWARC(t, filepath.Join(dir, "c.wacz"), "pdf.warc.gz", src)

	r, err := warcio.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []*warcio.Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Type == "response" {
			out = append(out, rec)
		}
	}
	if len(out) == 0 {
		t.Fatal("no response record in the corpus file")
	}
	return dir, out
}
