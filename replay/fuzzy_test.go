package replay

import (
	"strings"
	"testing"
)

func TestStripVolatile(t *testing.T) {
	ig := fuzzySet(DefaultFuzzyParams)
	for _, c := range []struct{ in, want string }{
		{"http://a.test/app.js?_=1700000000000", "http://a.test/app.js"},
		{"http://a.test/data.json?id=3&_=17&cb=9", "http://a.test/data.json?id=3"},
		{"http://a.test/p?utm_source=x&page=2", "http://a.test/p?page=2"},
		{"http://a.test/p?page=2", "http://a.test/p?page=2"},
		{"http://a.test/p", "http://a.test/p"},
	} {
		if got, _ := stripVolatile(c.in, ig); got != c.want {
			t.Errorf("%s: %s, want %s", c.in, got, c.want)
		}
	}
}

func TestParseAliases(t *testing.T) {
	m, err := ParseAliases(strings.NewReader("# aliases\n@alias http://old.test/a http://new.test/a\ncom,x)/b com,y)/b\n"), "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if m["test,old)/a"] != "test,new)/a" || m["com,x)/b"] != "com,y)/b" {
		t.Errorf("%v", m)
	}
	if _, err := ParseAliases(strings.NewReader("@alias onlyone\n"), "a.txt"); err == nil || !strings.Contains(err.Error(), "a.txt line 1") {
		t.Errorf("bad line: %v", err)
	}
}
