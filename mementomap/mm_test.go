package mementomap

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/ddtest"
)

var tmpPath = regexp.MustCompile(`/\S*/in\.ukvs`)

func TestKeysDataDriven(t *testing.T) {
	ddtest.Run(t, "testdata/keys.txt", func(t *testing.T, c *ddtest.Case) string {
		var sb strings.Builder
		for _, k := range strings.Fields(c.Input) {
			cands, _, err := Candidates([]byte(k), nil, nil)
			if err != nil {
				fmt.Fprintf(&sb, "%s: error: %v\n", k, err)
				continue
			}
			var s []string
			for _, c := range cands {
				s = append(s, string(c))
			}
			fmt.Fprintf(&sb, "%s: %s\n", k, strings.Join(s, " "))
		}
		return sb.String()
	})
}

// compactString compacts a map given as text.
func compactString(t *testing.T, in string, opts CompactOptions) (string, CompactStats, error) {
	t.Helper()
	dir := t.TempDir()
	ip, op := filepath.Join(dir, "in.ukvs"), filepath.Join(dir, "out.ukvs")
	if err := os.WriteFile(ip, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	opts.NoSync = true
	st, err := CompactFile(context.Background(), ip, op, opts)
	if err != nil {
		return "", st, err
	}
	b, err := os.ReadFile(op)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), st, nil
}

func optsFromCase(t *testing.T, c *ddtest.Case) CompactOptions {
	wh, err1 := strconv.ParseFloat(c.Arg("wh", "1"), 64)
	wp, err2 := strconv.ParseFloat(c.Arg("wp", "1"), 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("%s: bad weights", c.Pos)
	}
	opts := CompactOptions{Wh: wh, Wp: wp, AllowRoot: c.Arg("allow-root", "") == "true"}
	if s := c.Arg("means", ""); s != "" {
		m, err := ParseMeans(s)
		if err != nil {
			t.Fatalf("%s: %v", c.Pos, err)
		}
		opts.Means = &m
	}
	return opts
}

func TestCompactDataDriven(t *testing.T) {
	ddtest.Run(t, "testdata/compact.txt", func(t *testing.T, c *ddtest.Case) string {
		opts := optsFromCase(t, c)
		out, st, err := compactString(t, c.Input, opts)
		if err != nil {
			return "error: " + tmpPath.ReplaceAllString(err.Error(), "in.ukvs")
		}
		// Every input key must still be answered positively (unless it is
		// an exclusion, which must still exclude).
		checkRecall(t, c.Pos, c.Input, out)
		// Parallel compaction gives the same bytes.
		opts.Workers = 3
		if par, _, err := compactString(t, c.Input, opts); err != nil || par != out {
			t.Errorf("%s: parallel output differs (err %v):\n%s", c.Pos, err, par)
		}
		return fmt.Sprintf("%s# rollups %d, means %s", out, st.Rollups, st.Means)
	})
}

// checkRecall asserts that every data line of in is answered by out as it
// was: positive keys positive, exclusions excluded.
func checkRecall(t *testing.T, pos, in, out string) {
	t.Helper()
	m, err := NewMap([]byte(out))
	if err != nil {
		t.Fatalf("%s: %v", pos, err)
	}
	if err := m.Check(); err != nil {
		t.Fatalf("%s: output fails Check: %v", pos, err)
	}
	for _, l := range strings.Split(in, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || strings.HasPrefix(l, "!") {
			continue
		}
		want := !(f[1] == "0" || strings.HasPrefix(f[1], "0/") || strings.HasPrefix(f[1], "0-"))
		got, err := m.Lookup([]byte(f[0]), nil)
		if err != nil {
			t.Fatalf("%s: lookup %s: %v", pos, f[0], err)
		}
		if got.Present != want {
			t.Errorf("%s: key %s answered %v (via %q), input says %v", pos, f[0], got.Present, got.Key, want)
		}
	}
}

func TestLookupDataDriven(t *testing.T) {
	var m *Map
	ddtest.Run(t, "testdata/lookup.txt", func(t *testing.T, c *ddtest.Case) string {
		switch c.Cmd {
		case "map":
			var err error
			if m, err = NewMap([]byte(c.Input)); err != nil {
				return "error: " + err.Error()
			}
			if err := m.Check(); err != nil {
				return "error: " + err.Error()
			}
			out := fmt.Sprintf("%d headers", len(m.Headers()))
			if st := m.Normalized(); st.Normalized() {
				out += "\nnormalised: " + st.String() + "\n" + string(m.Data())
			}
			return out
		case "lookup":
			var sb strings.Builder
			var s Scratch
			for _, k := range strings.Fields(c.Input) {
				got, err := m.Lookup([]byte(k), &s)
				switch {
				case err != nil:
					fmt.Fprintf(&sb, "%s: error: %v\n", k, err)
				case got.Key == nil:
					fmt.Fprintf(&sb, "%s: absent (no key matched)\n", k)
				default:
					fmt.Fprintf(&sb, "%s: present=%v via %s %s\n", k, got.Present, got.Key, got.Freq)
				}
			}
			return sb.String()
		}
		t.Fatalf("unknown command %s", c.Cmd)
		return ""
	})
}

func TestLookupEmptyMap(t *testing.T) {
	for _, data := range []string{"", "!fields {}\n", "!fields {}"} {
		m, err := NewMap([]byte(data))
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Lookup([]byte("com,example)/"), nil)
		if err != nil || got.Present || got.Key != nil {
			t.Fatalf("empty map %q: %+v %v", data, got, err)
		}
	}
}

func TestOpenMapMmap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.ukvs")
	data := "!meta {\"a\":1}\ncom,a)/ 1\ncom,b)/* 2\n"
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := OpenMap(p)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !bytes.Equal(m.Data(), []byte("com,a)/ 1\ncom,b)/* 2\n")) {
		t.Fatalf("data %q", m.Data())
	}
	for k, want := range map[string]bool{"com,a)/": true, "com,b)/x/y": true, "com,c)/": false, "com,0)/": false} {
		got, err := m.Lookup([]byte(k), nil)
		if err != nil || got.Present != want {
			t.Errorf("%s: %+v %v, want %v", k, got, err, want)
		}
	}
}
