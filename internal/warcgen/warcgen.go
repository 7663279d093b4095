package warcgen

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand"
	"strings"
)

// File is a generated test file: its stored bytes, and what a correct
// reading of it finds.
type File struct {
	Name   string
	Data   []byte
	Keys   []string        // every record written, in order (framescan.Record.Key form)
	Good   map[string]bool // records no damage touched: never lost
	RawBad bool            // stored (gzip) bytes damaged: data offsets are not comparable
	Layout string          // "plain", "member", "multi" or "stream"
	// Recs locate every record written, in order (before any cut at the
	// end of the file).
	Recs []Placed
}

// Placed locates a generated record in its file.
type Placed struct {
	Key string
	// Member is the stored offset of the gzip member the record starts in
	// (its own offset in an uncompressed file), MemberLength that
	// member's stored length; Shared says other records share it.
	Member, MemberLength int64
	Shared               bool
	// DataOffset and DataLength locate the record in the uncompressed data.
	DataOffset, DataLength int64
	Good                   bool
}

// Rec is a generated record: its key (framescan.Record.Key form), its
// bytes, and whether it is undamaged.
type Rec struct {
	Key  string
	B    []byte
	Good bool
}

// Date is the WARC-Date of every generated record.
const Date = "2024-05-06T07:08:09Z"

// WARCRecord is WARC response record i with an HTTP 200 carrying body.
func WARCRecord(i int, body string) Rec {
	id := fmt.Sprintf("<urn:uuid:00000000-0000-0000-0000-%012d>", i)
	block := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body
	head := fmt.Sprintf("WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: %s\r\nWARC-Target-URI: http://example.org/%d\r\nWARC-Date: %s\r\nContent-Type: application/http;msgtype=response\r\nContent-Length: %d\r\n\r\n", id, i, Date, len(block))
	return Rec{Key: "id " + id, B: []byte(head + block + "\r\n\r\n"), Good: true}
}

// ARCRecord is ARC record i with an HTTP 200 carrying body.
func ARCRecord(i int, body string) Rec {
	block := "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body
	url := fmt.Sprintf("http://example.org/%d", i)
	return Rec{Key: "uri " + url + " 20240506070809", B: []byte(fmt.Sprintf("%s 10.0.0.1 20240506070809 text/plain %d\n%s\n", url, len(block), block)), Good: true}
}

// Filedesc is the filedesc record that starts an ARC file.
func Filedesc() Rec {
	fd := "1 0 Wayside\nURL IP-address Archive-date Content-type Archive-length\n"
	return Rec{Key: "uri filedesc://gen.arc 20240506070809", B: []byte(fmt.Sprintf("filedesc://gen.arc 0.0.0.0 20240506070809 text/plain %d\n%s\n", len(fd), fd)), Good: true}
}

// Body is a payload of n random printable bytes, some lines long.
func Body(rng *rand.Rand, n int) string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789 <>/=\n"
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[rng.Intn(len(chars))]
	}
	return string(b)
}

// SetDeclared replaces the declared length of a generated record.
func SetDeclared(r Rec, arc bool, delta int) Rec {
	s := string(r.B)
	if arc {
		nl := strings.IndexByte(s, '\n')
		line := s[:nl]
		sp := strings.LastIndexByte(line, ' ')
		var n int
		fmt.Sscan(line[sp+1:], &n)
		r.B = []byte(line[:sp+1] + fmt.Sprint(n+delta) + s[nl:])
		return r
	}
	i := strings.Index(s, "Content-Length: ")
	j := i + strings.Index(s[i:], "\r\n")
	var n int
	fmt.Sscan(s[i+len("Content-Length: "):j], &n)
	r.B = []byte(s[:i] + "Content-Length: " + fmt.Sprint(n+delta) + s[j:])
	return r
}

// Gzip compresses b as one gzip member.
func Gzip(b []byte) []byte {
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestSpeed)
	zw.Write(b)
	zw.Close()
	return z.Bytes()
}

// damage kinds
const (
	dmgNone = iota
	dmgHeader
	dmgLong
	dmgShort
	dmgGarbage
	dmgNoLF // ARC only: no line feed after the record
	dmgCount
)

// Case builds a file of n records in a layout ("plain", "member",
// "multi", "stream"), damaging some records.
func Case(rng *rand.Rand, arc bool, layout string, n int, damage bool) File {
	var recs []Rec
	if arc {
		recs = append(recs, Filedesc())
	} else {
		recs = append(recs, WARCRecord(0, "warcinfo-like first record"))
	}
	for i := 1; i < n; i++ {
		if arc {
			recs = append(recs, ARCRecord(i, Body(rng, 1+rng.Intn(3000))))
		} else {
			recs = append(recs, WARCRecord(i, Body(rng, 1+rng.Intn(3000))))
		}
	}
	if damage {
		// Damage records that are not adjacent, never the first.
		for i := 1; i < len(recs)-1; i += 2 + rng.Intn(3) {
			switch rng.Intn(dmgCount) {
			case dmgHeader:
				if arc {
					recs[i].B = bytes.Replace(recs[i].B, []byte(" 20240506070809 "), []byte(" 2024O506070809 "), 1)
				} else {
					recs[i].B = bytes.Replace(recs[i].B, []byte("WARC/1.0"), []byte("WARX/1.0"), 1)
				}
				recs[i].Good = false
			case dmgLong:
				recs[i] = SetDeclared(recs[i], arc, 1+rng.Intn(len(recs[i+1].B)/2))
				recs[i].Good = false
			case dmgShort:
				recs[i] = SetDeclared(recs[i], arc, -1-rng.Intn(20))
				recs[i].Good = false
			case dmgGarbage:
				g := []byte("\x01garbage " + Body(rng, 10+rng.Intn(200)) + "\n")
				recs[i].B = append(recs[i].B, g...)
				recs[i].Good = false
			case dmgNoLF:
				if arc {
					recs[i].B = bytes.TrimSuffix(recs[i].B, []byte("\n"))
				}
			}
		}
	}
	f := File{Good: map[string]bool{}, Layout: layout, Name: fmt.Sprintf("gen-%v-%s", arc, layout)}
	for _, r := range recs {
		f.Keys = append(f.Keys, r.Key)
		if r.Good {
			f.Good[r.Key] = true
		}
	}
	var data int64
	place := func(group []Rec, member int64, memberLen int64) {
		for _, r := range group {
			f.Recs = append(f.Recs, Placed{Key: r.Key, Member: member, MemberLength: memberLen, Shared: len(group) > 1,
				DataOffset: data, DataLength: int64(len(r.B)), Good: r.Good})
			data += int64(len(r.B))
		}
	}
	switch layout {
	case "plain":
		for _, r := range recs {
			place([]Rec{r}, int64(len(f.Data)), int64(len(r.B)))
			f.Data = append(f.Data, r.B...)
		}
	case "member":
		for _, r := range recs {
			z := Gzip(r.B)
			place([]Rec{r}, int64(len(f.Data)), int64(len(z)))
			f.Data = append(f.Data, z...)
		}
	case "multi":
		for i := 0; i < len(recs); {
			k := 1 + rng.Intn(4)
			var m []byte
			for j := i; j < i+k && j < len(recs); j++ {
				m = append(m, recs[j].B...)
			}
			z := Gzip(m)
			place(recs[i:min(i+k, len(recs))], int64(len(f.Data)), int64(len(z)))
			f.Data = append(f.Data, z...)
			i += k
		}
	case "stream":
		var all []byte
		for _, r := range recs {
			all = append(all, r.B...)
		}
		f.Data = Gzip(all)
		place(recs, 0, int64(len(f.Data)))
	}
	if !damage {
		return f
	}
	switch rng.Intn(4) {
	case 0: // stored bytes damaged in the middle of a gzip member
		if layout != "member" || len(recs) < 4 {
			break
		}
		k := 1 + rng.Intn(len(recs)-2)
		off := 0
		for _, r := range recs[:k] {
			off += len(Gzip(r.B))
		}
		m := len(Gzip(recs[k].B))
		for i := off + m/3; i < off+m/3+8 && i < off+m-8; i++ {
			f.Data[i] ^= 0x55
		}
		delete(f.Good, recs[k].Key)
		f.RawBad = true
	case 1: // cut at the end
		cut := 1 + rng.Intn(len(recs[len(recs)-1].B)/2)
		if layout != "plain" {
			cut = 1 + rng.Intn(20)
		}
		f.Data = f.Data[:len(f.Data)-cut]
		delete(f.Good, recs[len(recs)-1].Key)
		if layout == "stream" || layout == "multi" {
			// the last member's records are all in the cut member
			for _, r := range recs[max(0, len(recs)-4):] {
				delete(f.Good, r.Key)
			}
		}
	}
	return f
}

// Named is a generated file's name and stored bytes.
type Named struct {
	Name string
	Data []byte
}

// Cases returns n files of every layout (plain, member per record,
// multi-record members, one stream), WARC and ARC in turn, sound and
// damaged (damaged records, stored bytes damaged, cut files), every fifth
// with random stored damage on top (bytes flipped, garbage with a false
// gzip magic between members, bytes cut out), named "NN-name". The same
// seed gives the same files, and a shorter n a prefix of a longer one's.
func Cases(seed int64, n int) []Named {
	rng := rand.New(rand.NewSource(seed))
	var out []Named
	for it := range n {
		arc := it%2 == 1
		layout := []string{"plain", "member", "multi", "stream"}[(it/2)%4]
		f := Case(rng, arc, layout, 4+rng.Intn(14), it%3 != 0)
		data := f.Data
		if it%5 == 4 && len(data) > 64 {
			data = append([]byte(nil), data...)
			switch rng.Intn(3) {
			case 0:
				for range 1 + rng.Intn(4) {
					data[rng.Intn(len(data))] ^= byte(1 + rng.Intn(255))
				}
			case 1:
				at := rng.Intn(len(data))
				data = append(data[:at:at], append([]byte("garbage \x1f\x8b\x08 between\n"), data[at:]...)...)
			case 2:
				at := rng.Intn(len(data) - 16)
				data = append(data[:at:at], data[at+1+rng.Intn(15):]...)
			}
		}
		out = append(out, Named{Name: fmt.Sprintf("%02d-%s", it, f.Name), Data: data})
	}
	return out
}
