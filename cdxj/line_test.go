package cdxj

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside"
)

func TestFormatMatchesPywb(t *testing.T) {
	l := Line{Key: "com,example)/", Timestamp: "20140127171200", URL: "http://example.com", MIME: "text/html", Status: 200,
		Digest: "B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A", Length: 1046, Offset: 334, Filename: "dupes.warc.gz"}
	want := `com,example)/ 20140127171200 {"url": "http://example.com", "mime": "text/html", "status": "200", "digest": "B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A", "length": "1046", "offset": "334", "filename": "dupes.warc.gz"}` + "\n"
	if got := string(l.Format(nil)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, l := range []Line{
		{Key: "com,example)/", Timestamp: "20240301080000", URL: "http://example.com/ü?q=\"x\"\\\t\u2028😀", MIME: "text/html", Status: 404,
			Digest: "sha256:abc", Length: 0, Offset: 0, Filename: "a b.warc.gz", Redirect: "http://x/", MetaTags: "A",
			MIMEDetected: "text/plain", Metadata: `{"a": 1}`, Extra: []Field{{"method", []byte(`"POST"`)}, {"n", []byte(`3`)}}},
		{Key: "org,x)/", Timestamp: "2024", Length: -1, Offset: -1},
		{Key: "org,x)/", Timestamp: "20240301080000", MIME: RevisitMIME, Digest: "X", Length: 10, Offset: 20, Filename: "f"},
	} {
		s := string(l.Format(nil))
		if strings.Count(s, "\n") != 1 {
			t.Fatalf("line not single: %q", s)
		}
		for _, c := range s {
			if c > 127 {
				t.Fatalf("non-ASCII in %q", s)
			}
		}
		got, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if again := string(got.Format(nil)); again != s {
			t.Errorf("round trip:\n%s%s", s, again)
		}
		if got.URL != l.URL || got.Status != l.Status || got.Length != l.Length || got.Offset != l.Offset {
			t.Errorf("parsed %+v, want %+v", got, l)
		}
	}
}

func TestParseAcceptsNumbersAndDashes(t *testing.T) {
	l, err := Parse(`com,x)/ 20200101000000 {"url":"http://x/","status":200,"length":5,"offset":"7","digest":"-","mime":"-","filename":"f.warc.gz"}`)
	if err != nil || l.Status != 200 || l.Length != 5 || l.Offset != 7 || l.Digest != "-" {
		t.Fatalf("%+v %v", l, err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, s := range []string{
		"", "com,x)/", "com,x)/ 2020", "com,x)/ notatime {}", "com,x)/ 20200101000000 []",
		`com,x)/ 20200101000000 {"status": "abc"}`, `com,x)/ 20200101000000 {"status": 1000}`,
		`com,x)/ 20200101000000 {"length": -1}`, `com,x)/ 20200101000000 {"url": {}}`,
		`com,x)/ 20200101000000 {"url": "x"} trailing`, `com,x)/ 20200101000000 {"url": "x"`,
	} {
		if _, err := Parse(s); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) = %v, want ErrSyntax", s, err)
		}
	}
}

func TestFromCapture(t *testing.T) {
	date := time.Date(2024, 3, 1, 8, 0, 0, 123, time.UTC)
	c := wayside.Capture{URI: "https://www.Example.com/a/?b=2&a=1", Date: date, Type: "response", Digest: "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
		Status: 200, MIME: "text/html", File: "crawl-1.warc.gz", Offset: 10, Length: 20}
	l := FromCapture(c)
	want := `com,example)/a?a=1&b=2 20240301080000 {"url": "https://www.Example.com/a/?b=2&a=1", "mime": "text/html", "status": "200", "digest": "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ", "length": "20", "offset": "10", "filename": "crawl-1.warc.gz"}`
	if l.String() != want {
		t.Errorf("got  %s\nwant %s", l.String(), want)
	}
	c.Type, c.Status, c.Offset = "revisit", 304, 0
	l = FromCapture(c)
	if !l.IsRevisit() || l.Status != 304 || l.Offset != 0 || !strings.Contains(l.String(), `"offset": "0"`) {
		t.Errorf("revisit line %s", l.String())
	}
	if d, err := l.CanonicalDigest(); err != nil || d != c.Digest {
		t.Errorf("CanonicalDigest = %q, %v", d, err)
	}
}

func TestParseCDX(t *testing.T) {
	l, err := ParseCDX("com,example)/ 20140127171200 http://example.com text/html 200 B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A - - 1046 334 dupes.warc.gz", "")
	if err != nil || l.Key != "com,example)/" || l.Status != 200 || l.Length != 1046 || l.Offset != 334 || l.Filename != "dupes.warc.gz" || l.Redirect != "" {
		t.Fatalf("11 fields: %+v %v", l, err)
	}
	l, err = ParseCDX("com,example)/ 20140127171200 http://example.com warc/revisit - B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A http://r/ 334 dupes.warc.gz", "")
	if err != nil || l.Status != 0 || !l.IsRevisit() || l.Length != -1 || l.Offset != 334 || l.Redirect != "http://r/" {
		t.Fatalf("9 fields: %+v %v", l, err)
	}
	l, err = ParseCDX("com,example)/ 20140127171200 http://example.com text/html 200 B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A 1046", "")
	if err != nil || l.Length != 1046 || l.Offset != -1 {
		t.Fatalf("7 fields: %+v %v", l, err)
	}
	for _, bad := range []string{"a b c", "com,x)/ 2014xx http://x/ text/html 200 D - - 1 2 f", "com,x)/ 20140101 http://x/ text/html 2000 D - - 1 2 f", "com,x)/ 20140101 http://x/ text/html 200 D - - x 2 f"} {
		if _, err := ParseCDX(bad, ""); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseCDX(%q) = %v", bad, err)
		}
	}
}

func TestReaderMixedInput(t *testing.T) {
	in := " CDX N b a m s k r M S V g\n" +
		"com,a)/ 20200101000000 http://a/ text/html 200 AAAA - - 10 0 f.warc.gz\n" +
		"\n!meta ignored\n" +
		`com,b)/ 20200101000000 {"url": "http://b/", "offset": "5", "length": "6", "filename": "g"}` + "\n" +
		"com,c)/ 20200101000000 http://c/ text/html 200\n"
	r := NewReader(strings.NewReader(in), "mixed.cdx")
	a, err := r.Next()
	if err != nil || a.URL != "http://a/" || a.Length != 10 {
		t.Fatalf("%+v %v", a, err)
	}
	b, err := r.Next()
	if err != nil || b.URL != "http://b/" || b.Offset != 5 {
		t.Fatalf("%+v %v", b, err)
	}
	_, err = r.Next()
	if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "mixed.cdx line 6") {
		t.Fatalf("bad line error %v, want it to name mixed.cdx line 6", err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the last line: %v", err)
	}
}

func TestFromCaptureNormalisesDigest(t *testing.T) {
	c := wayside.Capture{URI: "http://a/", Type: "response", Digest: "sha1:da39a3ee5e6b4b0d3255bfef95601890afd80709"}
	if l := FromCapture(c); l.Digest != "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ" {
		t.Errorf("digest %q", l.Digest)
	}
}

// TestAppendJSONStringEscapes checks the escapes Python's json.dumps
// (ensure_ascii) writes, with plain runs before, between and after them.
func TestAppendJSONStringEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"":                           `""`,
		"plain text/html":            `"plain text/html"`,
		`a"b\c`:                      `"a\"b\\c"`,
		"x\ny\tz\r\b\f\x01\x1f\x7f.": `"x\ny\tz\r\b\f\u0001\u001f\u007f."`,
		"é€😀":                        `"\u00e9\u20ac\ud83d\ude00"`,
		"ab\xffcd\xe2\x82":           `"ab\ufffdcd\ufffd\ufffd"`,
		"http://x/?q=1&r=<2>":        `"http://x/?q=1&r=<2>"`,
	} {
		if got := string(appendJSONString([]byte("pre"), in)); got != "pre"+want {
			t.Errorf("appendJSONString(%q) = %s, want pre%s", in, got, want)
		}
	}
}

// TestTimestamp14MatchesFormat compares the hand-made 14-digit timestamp
// with time.Format's, in and out of the four-digit years.
func TestTimestamp14MatchesFormat(t *testing.T) {
	dates := []time.Time{
		time.Date(2024, 3, 1, 8, 0, 0, 329000000, time.UTC),
		time.Date(1996, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2000, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 5*3600+1800)),
		time.Date(9, 7, 8, 9, 10, 11, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC),
		{},
	}
	for _, d := range dates {
		if got, want := timestamp14(wayside.Capture{Date: d}), d.UTC().Format("20060102150405"); got != want {
			t.Errorf("timestamp14(%v) = %s, want %s", d, got, want)
		}
	}
}
