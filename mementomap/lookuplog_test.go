package mementomap

import (
	"strings"
	"testing"
)

func TestReadLookupLog(t *testing.T) {
	log := `# an access log of a Wayback and a Memento aggregator, and bare targets
127.0.0.1 - - [01/Jan/2019:00:00:00 +0000] "GET /web/20190101000000/http://example.com/ HTTP/1.1" 200 1234
10.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /web/2019id_/https://www.Example.com/a?b=1 HTTP/1.0" 302 - "http://ref.example/" "Mozilla/5.0"
10.0.0.2 - - [10/Oct/2000:13:55:36 -0700] "GET /timemap/link/http://odu.edu/ HTTP/1.1" 200 99 "-" "MemGator"
10.0.0.2 - - [10/Oct/2000:13:55:36 -0700] "GET /timegate/https:/collapsed.example.org/x HTTP/1.1" 302 0
10.0.0.2 - - [10/Oct/2000:13:55:36 -0700] "GET /web/*/http%3A%2F%2Fescaped.example.net%2Fp HTTP/1.1" 200 10
10.0.0.3 - - [10/Oct/2000:13:55:36 -0700] "GET http://archive.example/wayback/20100810032449/http://odu.edu/ HTTP/1.1" 200 1
10.0.0.3 - - [10/Oct/2000:13:55:36 -0700] "GET /wayback/20100810/noscheme.example.com/2019/x HTTP/1.1" 200 1
10.0.0.3 - - [10/Oct/2000:13:55:36 -0700] "GET /timemap/json/noscheme.example.com/ HTTP/1.1" 200 1
10.0.0.4 - - [10/Oct/2000:13:55:36 -0700] "GET /static/style.css HTTP/1.1" 200 500
10.0.0.4 - - [10/Oct/2000:13:55:36 -0700] "-" 400 0
http://example.com/
com,example)/b
not a uri at all

http://bare.example.com/x
`
	var bad []string
	got, st, err := ReadLookupLog(strings.NewReader(log), "access.log", LogOptions{OnBad: func(err error) { bad = append(bad, err.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"http://example.com/", "https://www.Example.com/a?b=1", "http://odu.edu/", "https://collapsed.example.org/x",
		"http://escaped.example.net/p", "noscheme.example.com/2019/x", "noscheme.example.com/", "com,example)/b", "http://bare.example.com/x",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("targets:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if st.Lines != 14 || st.Requests != 8 || st.Targets != 11 || st.Duplicates != 2 || st.Skipped != 3 || len(bad) != 3 {
		t.Fatalf("stats %+v, bad %q", st, bad)
	}
	if !strings.Contains(bad[0], "access.log:10:") || !strings.Contains(bad[0], "not of a Memento resource") || !strings.Contains(bad[2], "access.log:14:") {
		t.Fatalf("bad lines %q", bad)
	}
	all, _, _ := ReadLookupLog(strings.NewReader(log), "access.log", LogOptions{KeepDuplicates: true})
	if len(all) != 11 {
		t.Fatalf("%d targets with duplicates, want 11", len(all))
	}
	// Labelled against the full key list.
	full, err := NewMap([]byte("com,example)/ 3/1\ncom,example)/a 1/1\nedu,odu)/ 5/1\n"))
	if err != nil {
		t.Fatal(err)
	}
	var unlabelled []string
	set, err := LabelAgainst(full, got, func(err error) { unlabelled = append(unlabelled, err.Error()) })
	if err != nil {
		t.Fatal(err)
	}
	var present []string
	for _, l := range set {
		if l.Present {
			present = append(present, string(l.Key))
		}
	}
	if strings.Join(present, " ") != "com,example)/ com,example)/a edu,odu)/" || len(set) != 9 || len(unlabelled) != 0 {
		t.Fatalf("present %q of %d, unlabelled %q", present, len(set), unlabelled)
	}
}
