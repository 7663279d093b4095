package cdxj

import (
	"testing"
)

// FuzzParse: no panic; whatever parses formats to a line that parses to
// the same line again.
func FuzzParse(f *testing.F) {
	f.Add(`com,example)/ 20140127171200 {"url": "http://example.com", "mime": "text/html", "status": "200", "digest": "B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A", "length": "1046", "offset": "334", "filename": "dupes.warc.gz"}`)
	f.Add(`a 2020 {"x": [1, {"y": null}], "status": 5}`)
	f.Add(`a 20200101 {"url": "\ud83d\ude00\u0000"}`)
	f.Fuzz(func(t *testing.T, s string) {
		l, err := Parse(s)
		if err != nil {
			return
		}
		out := l.Format(nil)
		l2, err := Parse(string(out))
		if err != nil {
			t.Fatalf("Parse(%q) ok, but its Format %q does not parse: %v", s, out, err)
		}
		if out2 := l2.Format(nil); string(out2) != string(out) {
			t.Fatalf("format not stable:\n%s%s", out, out2)
		}
	})
}

// FuzzParseCDX: no panic; a parsed line has a key and a timestamp.
func FuzzParseCDX(f *testing.F) {
	f.Add("com,example)/ 20140127171200 http://example.com text/html 200 B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A - - 1046 334 dupes.warc.gz", "")
	f.Add("com,example)/ 20140127171200 http://example.com text/html 200 D 5", "N b a m s k S")
	f.Fuzz(func(t *testing.T, s, layout string) {
		l, err := ParseCDX(s, layout)
		if err != nil {
			return
		}
		if l.Key == "" || !isTimestamp(l.Timestamp) {
			t.Fatalf("ParseCDX(%q, %q) = %+v", s, layout, l)
		}
	})
}
