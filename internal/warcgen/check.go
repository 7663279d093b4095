package warcgen

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/framescan"
)

// Output is a record a reader (a command, the ingester) says it produced:
// its URI and, where its output names them, its stored offset and length
// (-1: not named).
type Output struct {
	URI         string
	Off, Length int64
}

// Reader describes a reader under the accounting property.
type Reader struct {
	Name string
	// Locates: the reader needs each record's own gzip member (an index
	// pointing at it); a record sharing a member with others may instead
	// be named, by its member's offset, as one it cannot locate.
	Locates bool
	// Lengths: the output gives each record's stored offset and length.
	Lengths bool
	// GoesOn: the reader goes on past damage without failing (a
	// tolerating flag, a daemon), naming each stretch.
	GoesOn bool
}

// URI is the target URI of a generated record, from its key.
func URI(p Placed) string {
	if id, ok := strings.CutPrefix(p.Key, "id <urn:uuid:00000000-0000-0000-0000-"); ok {
		n, _ := strconv.Atoi(strings.TrimSuffix(id, ">"))
		return fmt.Sprintf("http://example.org/%d", n)
	}
	return strings.Fields(strings.TrimPrefix(p.Key, "uri "))[0]
}

var offsetRE = regexp.MustCompile(`offset[ =](\d+)`) // "offset N" in a message, offset=N in a log record

// NamedOffsets returns the offsets in file the lines of stderr that name
// it give.
func NamedOffsets(stderr, file string) []int64 {
	var out []int64
	for _, line := range strings.Split(stderr, "\n") {
		if !strings.Contains(line, file) {
			continue
		}
		if m := offsetRE.FindStringSubmatch(line); m != nil {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			out = append(out, n)
		}
	}
	return out
}

// CheckReading checks what a reader made of the generated file f (stored
// as base): out, the records it produced, and named, the stored offsets of
// the stretches it named (failed: it reported failure). Every record no
// damage touched that the second framing (internal/framescan, not warcio)
// finds is in out, or — for a reader that Locates — named by its member's
// offset; every damaged record is in out or in a named stretch (one runs
// from its offset to the next record out or stretch named); nothing is
// in out that the file does not hold; where out gives offsets and
// lengths, every non-blank stored byte outside them lies in a named
// stretch (records out + stretches named = the file); the reader fails
// exactly when it named something (unless it GoesOn).
func CheckReading(t testing.TB, c Reader, f File, base string, out []Output, named []int64, failed bool) {
	t.Helper()
	namedIn := func(from, to int64) bool {
		for _, n := range named {
			if n >= from && n <= to {
				return true
			}
		}
		return false
	}
	sc, serr := framescan.Scan(bytes.NewReader(f.Data), int64(len(f.Data)))
	if serr != nil {
		t.Fatal(serr)
	}
	scanned := map[string]bool{}
	for _, r := range sc.Records {
		scanned[r.Key()] = true
	}
	outBy := map[string][]Output{}
	for _, o := range out {
		outBy[o.URI] = append(outBy[o.URI], o)
	}
	gen := map[string]Placed{}
	for _, p := range f.Recs {
		gen[URI(p)] = p
	}
	for uri := range outBy {
		if _, ok := gen[uri]; !ok && strings.HasPrefix(uri, "http") {
			t.Errorf("%s %s: output holds %s, which the file does not", c.Name, base, uri)
		}
	}
	// A stretch the command named runs from the offset it gives up to the
	// next record it output or stretch it named: coveredBy(k) says whether
	// the last of these at or before stored offset k is a named stretch.
	type event struct {
		off   int64
		named bool
	}
	var events []event
	for _, n := range named {
		events = append(events, event{n, true})
	}
	for _, o := range out {
		if p, ok := gen[o.URI]; ok {
			off := p.Member
			if o.Off >= 0 {
				off = o.Off
			}
			events = append(events, event{off, false})
		}
	}
	sort.Slice(events, func(i, j int) bool {
		return events[i].off < events[j].off || events[i].off == events[j].off && events[i].named && !events[j].named
	})
	coveredBy := func(k int64) bool {
		last := -1
		for i, e := range events {
			if e.off > k {
				break
			}
			if last < 0 || events[last].off != e.off || !events[last].named {
				last = i
			}
		}
		return last >= 0 && events[last].named
	}
	for _, p := range f.Recs {
		uri := URI(p)
		if !strings.HasPrefix(uri, "http") {
			continue // filedesc: not a capture
		}
		if len(outBy[uri]) > 1 {
			t.Errorf("%s %s: %s output %d times", c.Name, base, uri, len(outBy[uri]))
		}
		if len(outBy[uri]) == 1 {
			// (in an uncompressed file the blank lines ending a record may
			// be left out of its length: they belong to no record)
			if o := outBy[uri][0]; o.Off >= 0 && !p.Shared && f.Good[p.Key] && (o.Off != p.Member || o.Length > p.MemberLength || o.Length >= 0 && o.Length < p.MemberLength && (f.Layout != "plain" || len(bytes.Trim(f.Data[o.Off+o.Length:p.Member+p.MemberLength], "\r\n")) > 0)) {
				t.Errorf("%s %s: %s output at offset %d length %d, it is at %d length %d", c.Name, base, uri, o.Off, o.Length, p.Member, p.MemberLength)
			}
			continue
		}
		switch {
		case f.Good[p.Key] && scanned[p.Key]:
			if !(c.Locates && p.Shared && namedIn(p.Member, p.Member)) {
				t.Errorf("%s %s: good record %s (member at %d, shared %v) lost, not named", c.Name, base, uri, p.Member, p.Shared)
			}
		case !f.Good[p.Key] && p.Member < int64(len(f.Data)):
			if !coveredBy(min(p.Member+p.MemberLength, int64(len(f.Data))) - 1) {
				t.Errorf("%s %s: damaged record %s (member at %d length %d) neither output nor in a stretch named (named: %v)", c.Name, base, uri, p.Member, p.MemberLength, named)
			}
		}
	}
	// Records out + named spans = the file, where the output locates
	// records in the stored file (offset and length).
	if (f.Layout == "plain" || f.Layout == "member") && c.Lengths {
		var iv [][2]int64
		for _, o := range out {
			if o.Off >= 0 && o.Length > 0 {
				iv = append(iv, [2]int64{o.Off, o.Off + o.Length})
			}
		}
		for _, p := range f.Recs {
			if !strings.HasPrefix(URI(p), "http") && scanned[p.Key] && !namedIn(p.Member, p.Member) {
				iv = append(iv, [2]int64{p.Member, p.Member + p.MemberLength}) // filedesc: read, no capture
			}
		}
		sort.Slice(iv, func(i, j int) bool { return iv[i][0] < iv[j][0] })
		pos := int64(0)
		gap := func(from, to int64) {
			for k := from; k < to && k < int64(len(f.Data)); k++ {
				if b := f.Data[k]; b == '\r' || b == '\n' || b == ' ' || b == '\t' {
					continue
				}
				if !coveredBy(k) {
					t.Errorf("%s %s: byte %d is in no record output and in no stretch named", c.Name, base, k)
				}
				return
			}
		}
		for _, x := range iv {
			if x[0] < pos {
				t.Errorf("%s %s: output records overlap at %d", c.Name, base, x[0])
			}
			gap(pos, x[0])
			pos = max(pos, x[1])
		}
		gap(pos, int64(len(f.Data)))
	}
	switch {
	case c.GoesOn:
		if failed {
			t.Errorf("%s %s: failed, though it goes on past damage", c.Name, base)
		}
	case len(named) > 0 && !failed:
		t.Errorf("%s %s: succeeded though it named %d stretches", c.Name, base, len(named))
	case len(named) == 0 && failed:
		t.Errorf("%s %s: failed naming nothing in the file", c.Name, base)
	}
}
