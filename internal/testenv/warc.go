package testenv

import (
	"io"
	"testing"

	"github.com/nlnwa/gowarc"
)

// StrictWARC reads a WARC file with gowarc (v1.6.0) failing on any syntax
// or specification error, fixing nothing, and checks every block and
// payload digest; every validation message fails the test. It returns the
// number of records. (gowarc digests the chunk framing of chunked HTTP
// bodies, not the de-chunked entity the spec defines: use it on files
// without chunked bodies, or check those payload digests another way.)
func StrictWARC(t testing.TB, path string) int {
	t.Helper()
	fr, err := gowarc.NewWarcFileReader(path, 0, gowarc.WithStrictValidation(),
		gowarc.WithAddMissingDigest(false), gowarc.WithFixDigest(false),
		gowarc.WithFixContentLength(false), gowarc.WithFixSyntaxErrors(false))
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	n := 0
	for {
		rec, off, val, err := fr.Next()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatalf("%s offset %d: gowarc strict: %v", path, off, err)
		}
		v := &gowarc.Validation{}
		if err := rec.ValidateDigest(v); err != nil {
			t.Fatalf("%s offset %d: gowarc digest: %v", path, off, err)
		}
		for _, e := range append(*val, *v...) {
			t.Errorf("%s offset %d (%s %s): gowarc: %v", path, off, rec.Type(), rec.WarcHeader().Get(gowarc.WarcTargetURI), e)
		}
		rec.Close()
		n++
	}
}
