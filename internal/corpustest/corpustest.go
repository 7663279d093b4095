// Package corpustest gives tests the payloads of records in the shared
// corpus (../shared/corpus), read with warcio: real files of many formats
// to build test sites and containers from. (It is apart from testenv,
// which warcio's own tests use.)
package corpustest

import (
	"path/filepath"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

// Payload returns the payload of the response record for uri in the
// corpus WARC file, failing the test when there is none.
func Payload(t testing.TB, file, uri string) []byte {
	t.Helper()
	r, err := warcio.Open(filepath.Join(testenv.SharedDir(t), "corpus", "warc", file), warcio.Options{KeepPayload: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if err != nil {
			t.Fatalf("%s: no response for %s (%v)", file, uri, err)
		}
		if rec.Type == "response" && rec.TargetURI == uri {
			return rec.Payload
		}
	}
}
