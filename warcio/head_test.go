package warcio

import (
	"crypto/sha1"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/digest"
)

// TestHeadsOfEverySize: WARC and HTTP heads are read the same whether they
// are buffered whole (read as one string) or not (line by line): heads of
// random sizes around and beyond the read-ahead of each (long values,
// folded lines, lines without a colon, LF-only line ends), in plain and
// gzip files, give exactly the fields, anomalies, head length and payload
// digest the generator wrote.
func TestHeadsOfEverySize(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 7))
	type want struct {
		warc, http    Header
		colonless     int
		headLen       int
		payloadDigest string
		body          string
	}
	value := func() string {
		n := rng.IntN(64)
		if rng.IntN(6) == 0 {
			n = rng.IntN(12 << 10) // beyond the look-ahead, now and then
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = "abcdefgh =;/,:"[rng.IntN(14)]
		}
		return strings.TrimSpace(string(b))
	}
	for round := range 40 {
		eol := "\r\n"
		if round%5 == 4 {
			eol = "\n"
		}
		var recs []rec
		var wants []want
		for i := range 6 {
			var w want
			// HTTP head.
			var hh strings.Builder
			hh.WriteString("HTTP/1.1 200 OK" + eol)
			for j := range rng.IntN(30) {
				name := fmt.Sprintf("X-H%d", j)
				v := value()
				hh.WriteString(name + ": " + v + eol)
				f := Field{Name: name, Value: v}
				if rng.IntN(8) == 0 {
					more := value()
					hh.WriteString("\t" + more + eol)
					f.Value += " " + more
				}
				w.http = append(w.http, f)
			}
			hh.WriteString(eol)
			w.headLen = hh.Len()
			w.body = strings.Repeat(fmt.Sprintf("body %d %d ", round, i), rng.IntN(3000))
			w.payloadDigest = digest.Digest{Alg: digest.SHA1, Sum: func() []byte { s := sha1.Sum([]byte(w.body)); return s[:] }()}.String()
			// WARC head: the fields rec.bytes writes, then extra ones.
			var extra []string
			for j := range rng.IntN(12) {
				switch rng.IntN(10) {
				case 0:
					extra = append(extra, "no colon here")
					w.colonless++
					continue
				}
				name := fmt.Sprintf("X-Warc-%d", j)
				v := value()
				if rng.IntN(4) == 0 {
					v = strings.Repeat("w", rng.IntN(24<<10))
				}
				extra = append(extra, name+": "+v)
				w.warc = append(w.warc, Field{Name: name, Value: v})
			}
			recs = append(recs, rec{typ: "response", uri: fmt.Sprintf("http://example.com/%d/%d", round, i), block: hh.String() + w.body, eol: eol, extra: extra})
			wants = append(wants, w)
		}
		for _, compress := range []bool{false, true} {
			file, _ := build(compress, recs...)
			got, err := readBytes(t, file)
			if err != nil || len(got) != len(recs) {
				t.Fatalf("round %d compress %v: %d records, %v", round, compress, len(got), err)
			}
			for i, g := range got {
				w := wants[i]
				if g.TargetURI != recs[i].uri || g.Type != "response" || g.Date != mustDate("2024-03-01T08:00:00Z") {
					t.Fatalf("round %d record %d: uri %q type %q date %v", round, i, g.TargetURI, g.Type, g.Date)
				}
				// rec.bytes writes 5 fields, the extra ones, Content-Length.
				if len(g.Headers) != 6+len(w.warc) {
					t.Fatalf("round %d record %d: %d WARC fields, want %d", round, i, len(g.Headers), 6+len(w.warc))
				}
				for j, f := range w.warc {
					if g.Headers[5+j] != f {
						t.Fatalf("round %d record %d: WARC field %d = %.60q, want %.60q", round, i, j, g.Headers[5+j], f)
					}
				}
				if n := strings.Count(strings.Join(g.Anomalies, "\n"), "header line without a colon"); n != w.colonless {
					t.Fatalf("round %d record %d: %d colonless anomalies, want %d: %q", round, i, n, w.colonless, g.Anomalies)
				}
				if g.HTTP == nil || g.HTTP.Status != 200 || len(g.HTTP.Header) != len(w.http) {
					t.Fatalf("round %d record %d: HTTP %+v, want %d fields", round, i, g.HTTP, len(w.http))
				}
				for j, f := range w.http {
					if g.HTTP.Header[j] != f {
						t.Fatalf("round %d record %d: HTTP field %d = %.60q, want %.60q", round, i, j, g.HTTP.Header[j], f)
					}
				}
				if g.HTTP.HeadLength != int64(w.headLen) || g.PayloadDigest != w.payloadDigest || g.PayloadLength != int64(len(w.body)) {
					t.Fatalf("round %d record %d: head %d payload %d %s, want %d %d %s", round, i, g.HTTP.HeadLength, g.PayloadLength, g.PayloadDigest, w.headLen, len(w.body), w.payloadDigest)
				}
			}
		}
	}
}

// TestGetEachIsGet: getEach gives for every name what Get gives, on random
// headers with duplicate fields, empty values, odd case and names that
// fold to the wanted ones only through non-ASCII letters (the Kelvin sign
// K and the long s fold to k and s).
func TestGetEachIsGet(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 9))
	pool := []string{"WARC-Type", "warc-type", "WARC-TYPE", "WARC-Date", "WARC-Block-Digest",
		"WARC-Bloc\u212a-Digest", "WARC-Block-Dige\u017ft", "Content-Length", "content-length",
		"Content-Type", "WARC-Target-URI", "WARC-Record-ID", "WARC-Payload-Digest", "X-Other", "WARC-Typ", "",
		"WARC-Refers-To", "warc-truncated", "WARC-Profile", "ETag", "etag", "Last-Modified", "KTag",
		"WARC-Identified-Payload-Type", "WARC-Json-Metadata", "WARC-Filename", "WARC-Refers-To-Date"}
	for range 20000 {
		var h Header
		for range rng.IntN(12) {
			v := ""
			if rng.IntN(4) > 0 {
				v = fmt.Sprintf("v%d", rng.IntN(100))
			}
			h = append(h, Field{Name: pool[rng.IntN(len(pool))], Value: v})
		}
		for _, set := range []*fieldSet{warcHeadSet, captureSet, captureHTTPSet} {
			got := make([]string, len(set.names))
			h.getEach(set, got)
			for i, n := range set.names {
				if want := h.Get(n); got[i] != want {
					t.Fatalf("getEach(%q) = %q, Get gives %q (header %q)", n, got[i], want, h)
				}
			}
		}
	}
}
