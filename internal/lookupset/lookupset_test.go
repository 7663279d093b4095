package lookupset

import (
	"errors"
	"strings"
	"testing"
)

func TestEach(t *testing.T) {
	var got []string
	err := Each(strings.NewReader("# set\n\n1 http://a/\n  0   b,*  \n"), "s.txt", "<l> <t>", func(line int, l, tg string) error {
		got = append(got, l+"|"+tg)
		return nil
	})
	if err != nil || strings.Join(got, " ") != "1|http://a/ 0|b,*" {
		t.Errorf("%v %q", err, got)
	}
	if err := Each(strings.NewReader("1 x\nlonely\n"), "s.txt", "<l> <t>", func(int, string, string) error { return nil }); err == nil || err.Error() != `s.txt:2: want "<l> <t>"` {
		t.Errorf("no target: %v", err)
	}
	bad := errors.New("bad label")
	if err := Each(strings.NewReader("\n\nz x\n"), "s.txt", "", func(int, string, string) error { return bad }); !errors.Is(err, bad) || err.Error() != "s.txt:3: bad label" {
		t.Errorf("fn error: %v", err)
	}
}
