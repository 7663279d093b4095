package mementomap

import (
	"strings"
	"testing"
)

func TestEvaluate(t *testing.T) {
	full, _ := NewMap([]byte("!meta {}\ncom,a)/ 1\ncom,a)/x 1\ncom,a)/y 1\ncom,b)/ 1\n"))
	small, _ := NewMap([]byte("com,a)/* 3\ncom,b)/ 1\n"))
	set, err := ReadLabelled(strings.NewReader("# present\n1 http://a.com/x\n+ com,b)/\npresent http://www.a.com/\n"+
		"0 http://a.com/z\nabsent http://c.com/\n- http://b.com/q\n"), "set", nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Evaluate(small, full, set)
	if err != nil {
		t.Fatal(err)
	}
	// a.com/z is a false positive (a.com rolled up); c.com and b.com/q are
	// true negatives.
	if r.TP != 3 || r.FP != 1 || r.TN != 2 || r.FN != 0 || r.Lines != 2 || r.FullLines != 4 || r.RelLines != 0.5 ||
		r.Accuracy != 5.0/6 || r.Precision != 0.75 || r.Recall != 1 {
		t.Fatalf("%+v", r)
	}
	if _, err := ReadLabelled(strings.NewReader("maybe http://a.com/\n"), "bad.txt", nil); err == nil || !strings.Contains(err.Error(), "bad.txt:1") {
		t.Fatalf("bad label: %v", err)
	}
}

// TestLookupLenientFile: tab separators, runs of blanks and CRLF line ends
// (lenient UKVS) are looked up like strict lines.
func TestLookupLenientFile(t *testing.T) {
	m, err := NewMap([]byte("!meta {a: 1}\r\n\r\ncom,a)/\t1\r\ncom,a)/b   2/1 {x: 1}\r\ncom,b)/*\t0\r\ncom,b)/c 3\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"com,a)/": "com,a)/", "com,a)/b": "com,a)/b", "com,b)/x": "com,b)/*", "com,b)/c": "com,b)/c", "com,a)/z": ""} {
		got, err := m.Lookup([]byte(k), nil)
		if err != nil || string(got.Key) != want {
			t.Errorf("%s: %+v %v, want key %q", k, got, err, want)
		}
	}
	if len(m.Headers()) != 1 || string(m.Headers()[0].Value) != `{"a":1}` {
		t.Fatalf("headers %+v", m.Headers())
	}
}
