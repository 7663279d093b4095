package ukvs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/ddtest"
)

// rewrite reads in leniently and writes it strictly.
func rewrite(in string, opts ReaderOptions) (string, error) {
	r := NewReader(strings.NewReader(in), "input", opts)
	hs, err := r.Headers()
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	w := NewWriter(&out)
	for _, h := range hs {
		if err := w.WriteHeader(h); err != nil {
			return "", err
		}
	}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		if err := w.Write(rec); err != nil {
			return "", err
		}
	}
	if err := w.Flush(); err != nil {
		return "", err
	}
	if r.Skipped() > 0 {
		return out.String(), fmt.Errorf("skipped %d bad lines", r.Skipped())
	}
	return out.String(), nil
}

func TestDataDriven(t *testing.T) {
	ddtest.Run(t, "testdata/ukvs.txt", func(t *testing.T, c *ddtest.Case) string {
		switch c.Cmd {
		case "roundtrip":
			opts := ReaderOptions{SkipBad: c.Arg("skip-bad", "") == "true"}
			var skips []string
			opts.OnSkip = func(e *Error) { skips = append(skips, "skip: "+e.Error()) }
			out, err := rewrite(c.Input, opts)
			if err != nil && !opts.SkipBad {
				return "error: " + err.Error()
			}
			// The strict output must read back and write out unchanged.
			again, err2 := rewrite(out, ReaderOptions{})
			if err2 != nil || again != out {
				t.Errorf("%s: strict output does not round-trip (err %v):\n%s\nvs\n%s", c.Pos, err2, out, again)
			}
			if len(skips) == 0 {
				return out
			}
			return strings.Join(skips, "\n") + "\n" + out
		case "freq":
			var sb strings.Builder
			for _, l := range strings.Split(strings.TrimSpace(c.Input), "\n") {
				f, err := ParseFreq([]byte(l))
				if err != nil {
					fmt.Fprintf(&sb, "%s -> error: %v\n", l, err)
					continue
				}
				fmt.Fprintf(&sb, "%s -> %s exclusion=%v\n", l, f, f.IsExclusion())
			}
			return sb.String()
		case "sum":
			var sb strings.Builder
			for _, l := range strings.Split(strings.TrimSpace(c.Input), "\n") {
				var acc, over Freq
				for i, p := range strings.Fields(l) {
					f, err := ParseFreq([]byte(p))
					if err != nil {
						t.Fatalf("%s: %v", c.Pos, err)
					}
					if i == 0 {
						acc, over = f, f
						continue
					}
					acc = acc.Add(f)
					over = Freq{M: over.M.Add(f.M), R: over.R.AddOverlapping(f.R)}
				}
				fmt.Fprintf(&sb, "%s -> disjoint %s, overlapping URI-Rs %s\n", l, acc, over)
			}
			return sb.String()
		}
		t.Fatalf("%s: unknown command %s", c.Pos, c.Cmd)
		return ""
	})
}

func TestReaderErrorNamesFileAndLine(t *testing.T) {
	in := "!fields {keys: [\"surt\"], values: [\"frequency\"]}\ncom,a)/ 1\ncom,b)/ x\n"
	r := NewReader(strings.NewReader(in), "maps/a.ukvs", ReaderOptions{})
	var err error
	for err == nil {
		_, err = r.Next()
	}
	var ue *Error
	if !errors.As(err, &ue) || ue.File != "maps/a.ukvs" || ue.Line != 3 {
		t.Fatalf("got %v, want an *Error at maps/a.ukvs:3", err)
	}
	if !strings.Contains(err.Error(), "maps/a.ukvs:3") {
		t.Fatalf("message %q does not name file and line", err)
	}
}

func TestReaderCRLF(t *testing.T) {
	out, err := rewrite("!meta {a: 1}\r\ncom,a)/ 1\r\ncom,b)/ 2/1 {x: 1}\r\n", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "!meta {\"a\":1}\ncom,a)/ 1\ncom,b)/ 2/1 {\"x\":1}\n"; out != want {
		t.Fatalf("got %q, want %q", out, want)
	}
}

func TestReaderUnsorted(t *testing.T) {
	in := "com,b)/ 1\ncom,a)/ 1\n"
	r := NewReader(strings.NewReader(in), "x", ReaderOptions{})
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, ErrUnsorted) {
		t.Fatalf("got %v, want ErrUnsorted", err)
	}
}

func TestReaderLongLine(t *testing.T) {
	key := "com,example)/" + strings.Repeat("a", 200000)
	r := NewReader(strings.NewReader(key+" 3\ncom,f)/ 1\n"), "x", ReaderOptions{})
	rec, err := r.Next()
	if err != nil || string(rec.Key) != key || rec.Freq.M.N != 3 {
		t.Fatalf("long line: %v", err)
	}
	rec, err = r.Next()
	if err != nil || string(rec.Key) != "com,f)/" {
		t.Fatalf("line after long line: %q %v", rec.Key, err)
	}
}

func TestWriterRejects(t *testing.T) {
	w := NewWriter(io.Discard)
	if err := w.Write(Record{Key: []byte("com,b)/"), Freq: Freq{M: Exactly(1)}}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []Record{
		{Key: []byte("com,a)/"), Freq: Freq{M: Exactly(1)}},                        // unsorted
		{Key: []byte("com,b)/"), Freq: Freq{M: Exactly(1)}},                        // duplicate
		{Key: []byte("com,c) /"), Freq: Freq{M: Exactly(1)}},                       // blank in key
		{Key: []byte("com,d)/"), Freq: Freq{M: Exactly(1)}, JSON: []byte("{a:1}")}, // not strict
	} {
		if err := w.Write(r); err == nil {
			t.Errorf("Write(%q) accepted", r.Key)
		}
	}
	if err := w.WriteHeader(Header{Name: "meta", Value: []byte("{}")}); err == nil {
		t.Error("header after data accepted")
	}
}

func FuzzParseRecord(f *testing.F) {
	for _, s := range []string{
		"com,example)/ 200", "com,cnn)/* 400+/100", "* /", "com,a)/ /50~ {datetime: {\"2014\": \"20~/10\"}}",
		"com,a)/ 0/20", "com,a)/ 1 {'a': 'b\\'c'}", "com,a)/ 1 {a: [1, 2,],}", "!meta {x: 1}", "k 9999999999999999999",
		"k 1/2/3", "k +", "k 1 {", "k 1 {\"a\":\"\\u00e9\"}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsAny(s, "\n") {
			return
		}
		if strings.HasPrefix(s, "!") {
			h, err := ParseHeader([]byte(s))
			if err == nil {
				if _, err := ParseHeader(AppendHeader(nil, h)[:len(AppendHeader(nil, h))-1]); err != nil {
					t.Fatalf("header %q rewritten as %q does not parse: %v", s, AppendHeader(nil, h), err)
				}
			}
			return
		}
		r, err := ParseRecord([]byte(s))
		if err != nil {
			return
		}
		out := AppendRecord(nil, r)
		r2, err := ParseRecord(out[:len(out)-1])
		if err != nil {
			t.Fatalf("%q rewritten as %q does not parse: %v", s, out, err)
		}
		if out2 := AppendRecord(nil, r2); !bytes.Equal(out, out2) {
			t.Fatalf("not a fixed point: %q -> %q -> %q", s, out, out2)
		}
	})
}
