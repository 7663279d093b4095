package ingest

import "testing"

// FuzzCrawlLogLine: every line is counted as parsed or unparsed.
func FuzzCrawlLogLine(f *testing.F) {
	f.Add("2014-11-24T21:11:46.471Z   200      12345 http://www.example.com/ - - text/html #042 20141124211146143+311 sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567 - duplicate:digest {}")
	f.Add("garbage")
	f.Add("")
	f.Fuzz(func(t *testing.T, line string) {
		c := newCrawlLog("x")
		c.parse([]byte(line))
		st := c.status()
		if st.Lines+st.Unparsed != 1 {
			t.Fatalf("%q: lines %d unparsed %d", line, st.Lines, st.Unparsed)
		}
	})
}

func TestCrawlLogDuplicateOnlyInAnnotations(t *testing.T) {
	c := newCrawlLog("x")
	// "duplicate:" in the URI field is not an annotation.
	c.parse([]byte("2014-11-24T21:11:46.471Z 200 1 http://x/duplicate:digest - - text/html #1 20141124211146143+1 sha1:A - - {}"))
	if st := c.status(); st.Duplicates != 0 || st.Lines != 1 {
		t.Errorf("%+v", st)
	}
}
