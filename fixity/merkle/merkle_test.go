package merkle

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/ddtest"
)

func TestRFC9162Vectors(t *testing.T) {
	f, err := os.Open("testdata/rfc9162.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var leaves [][]byte
	sc := bufio.NewScanner(f)
	line, checked := 0, 0
	for sc.Scan() {
		line++
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 || strings.HasPrefix(fs[0], "#") {
			continue
		}
		switch fs[0] {
		case "leaf":
			s := fs[1]
			if s == "-" {
				s = ""
			}
			b, err := hex.DecodeString(s)
			if err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
			leaves = append(leaves, b)
		case "root":
			n, err := strconv.Atoi(fs[1])
			if err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
			if got := Root(leaves[:n]).String(); got != fs[2] {
				t.Errorf("line %d: root of %d leaves = %s, want %s", line, n, got, fs[2])
			}
			checked++
		default:
			t.Fatalf("line %d: unknown directive %q", line, fs[0])
		}
	}
	if checked != 9 {
		t.Fatalf("checked %d roots, want 9", checked)
	}
}

func TestOddLeafIsNotDuplicated(t *testing.T) {
	a, b, c := []byte("a"), []byte("b"), []byte("c")
	if Root([][]byte{a, b, c}) == Root([][]byte{a, b, c, c}) {
		t.Fatal("a 3-leaf tree has the root of the same tree with its last leaf duplicated")
	}
	// Split at the largest power of two below n: for 5 leaves that is 4|1.
	l := [][]byte{a, b, c, []byte("d"), []byte("e")}
	want := NodeHash(Root(l[:4]), Root(l[4:]))
	if got := Root(l); got != want {
		t.Fatalf("5-leaf root %s, want %s (split 4|1)", got, want)
	}
}

func TestSplitPoint(t *testing.T) {
	for n, want := range map[int]int{2: 1, 3: 2, 4: 2, 5: 4, 8: 4, 9: 8, 1000: 512, 1025: 1024} {
		if got := splitPoint(n); got != want {
			t.Errorf("splitPoint(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestLeafEncoding(t *testing.T) {
	const path = "testdata/leaves.txt"
	in, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	lines := strings.Split(strings.TrimRight(string(in), "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "#") || strings.HasPrefix(l, "  ") || l == "" {
			if !strings.HasPrefix(l, "  ") {
				out.WriteString(l + "\n")
			}
			continue
		}
		out.WriteString(l + "\n")
		tag := Tag(l[0])
		var fields [][]byte
		for _, q := range strings.Split(l[2:], "|") {
			s, err := strconv.Unquote(q)
			if err != nil {
				t.Fatalf("%s:%d: field %s: %v", path, i+1, q, err)
			}
			fields = append(fields, []byte(s))
		}
		enc := Encode(tag, fields...)
		gotTag, gotFields, err := Decode(enc)
		if err != nil || gotTag != tag || len(gotFields) != len(fields) {
			t.Fatalf("%s:%d: round trip: tag %c fields %d err %v", path, i+1, gotTag, len(gotFields), err)
		}
		for j := range fields {
			if !bytes.Equal(gotFields[j], fields[j]) {
				t.Fatalf("%s:%d: field %d round trips to %q", path, i+1, j, gotFields[j])
			}
		}
		fmt.Fprintf(&out, "  encoding %x\n  leafhash %s\n", enc, LeafHash(enc))
	}
	ddtest.Golden(t, path, out.Bytes())
}

func TestDecodeRejectsMalformed(t *testing.T) {
	for _, b := range [][]byte{nil, {'H', 0, 0}, {'H', 0, 0, 0, 5, 'a'}} {
		if _, _, err := Decode(b); err == nil {
			t.Errorf("Decode(%x) accepted malformed input", b)
		}
	}
}

func TestParseHash(t *testing.T) {
	h := Sum([]byte("x"))
	p, err := ParseHash(h.String())
	if err != nil || p != h {
		t.Fatalf("ParseHash round trip: %v %v", p, err)
	}
	for _, s := range []string{"", "zz", strings.Repeat("g", 64)} {
		if _, err := ParseHash(s); err == nil {
			t.Errorf("ParseHash(%q) accepted", s)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(TagHeader, []byte("a"), []byte("b")))
	f.Add([]byte{'S'})
	f.Add([]byte{'S', 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		tag, fields, err := Decode(b)
		if err != nil {
			return
		}
		if re := Encode(tag, fields...); !bytes.Equal(re, b) {
			t.Fatalf("Decode/Encode not inverse: %x -> %x", b, re)
		}
	})
}

// TestPlainRoot checks the plain tree against its definition written out
// by hand: pairs left to right, the odd last node promoted unchanged.
func TestPlainRoot(t *testing.T) {
	n := func(i byte) Hash { return Sum([]byte{i}) }
	pair := func(a, b Hash) Hash { return Sum(append(a[:], b[:]...)) }
	cases := []struct {
		nodes []Hash
		want  Hash
	}{
		{nil, Sum(nil)},
		{[]Hash{n(0)}, n(0)},
		{[]Hash{n(0), n(1)}, pair(n(0), n(1))},
		{[]Hash{n(0), n(1), n(2)}, pair(pair(n(0), n(1)), n(2))},
		{[]Hash{n(0), n(1), n(2), n(3), n(4)}, pair(pair(pair(n(0), n(1)), pair(n(2), n(3))), n(4))},
		{[]Hash{n(0), n(1), n(2), n(3), n(4), n(5)}, pair(pair(pair(n(0), n(1)), pair(n(2), n(3))), pair(n(4), n(5)))},
	}
	for i, c := range cases {
		in := append([]Hash(nil), c.nodes...)
		if got := PlainRoot(c.nodes); got != c.want {
			t.Errorf("case %d (%d nodes): %s, want %s", i, len(c.nodes), got, c.want)
		}
		for j := range in {
			if in[j] != c.nodes[j] {
				t.Fatalf("case %d: PlainRoot changed its input", i)
			}
		}
	}
	// Promotion, not duplication (Bitcoin's rule): [a b c] and [a b c c]
	// differ.
	if PlainRoot([]Hash{n(0), n(1), n(2)}) == PlainRoot([]Hash{n(0), n(1), n(2), n(2)}) {
		t.Error("an odd last node was duplicated instead of promoted")
	}
}
