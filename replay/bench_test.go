package replay

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

var _ io.Writer = (*discardWriter)(nil)

// BenchmarkTimeMap serves the link-format TimeMap of a URL with 10,000
// captures (scripts/bench-access.sh measures it over loopback).
func BenchmarkTimeMap(b *testing.B) {
	ix := manyCaptures(b, 10000)
	h, err := New(Options{Index: ix})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "http://archive.test/default/timemap/link/http://big.example.com/page", nil)
	b.ResetTimer()
	for range b.N {
		if err := h.Serve(&discardWriter{h: http.Header{}}, req, ""); err != nil {
			b.Fatal(err)
		}
	}
}
