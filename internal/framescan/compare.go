package framescan

import "fmt"

// Key is the key Record.Key gives a record with this WARC-Record-ID (""
// for ARC records), URI and date as written.
func Key(id, uri, date string) string {
	if id != "" {
		return "id " + id
	}
	return "uri " + uri + " " + date
}

// Read is a record another reader read: its Key and where it read it.
type Read struct {
	Key                string
	Offset, DataOffset int64
}

// Extent is a stretch another reader reported it could not read: stored
// (Length > 0) and/or uncompressed (DataOffset >= 0) extents.
type Extent struct {
	Offset, Length         int64
	DataOffset, DataLength int64
}

// Covers reports whether rec starts inside e.
func (e Extent) Covers(rec Record) bool {
	return e.Length > 0 && rec.Member >= e.Offset && rec.Member < e.Offset+e.Length ||
		e.DataOffset >= 0 && rec.DataOffset >= e.DataOffset && rec.DataOffset < e.DataOffset+e.DataLength
}

// Compare lists where another reading of the file named name (records
// read, stretches reported unreadable) disagrees with the scan: a record
// the scan finds that was neither read nor inside a reported stretch, and
// a record read that the scan does not find.
func Compare(name string, res *Result, read []Read, unreadable []Extent) []string {
	readKeys := map[string]int{}
	for _, r := range read {
		readKeys[r.Key]++
	}
	var out []string
	for _, rec := range res.Records {
		if k := rec.Key(); readKeys[k] > 0 {
			readKeys[k]--
			continue
		}
		covered := false
		for _, e := range unreadable {
			if e.Covers(rec) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, fmt.Sprintf("%s offset %d (uncompressed offset %d): %s record %s found by the second framing, neither read nor reported unreadable", name, rec.Member, rec.DataOffset, rec.Type, rec.Key()))
		}
	}
	for _, r := range read {
		if readKeys[r.Key] > 0 {
			readKeys[r.Key]--
			out = append(out, fmt.Sprintf("%s offset %d (uncompressed offset %d): record %s read, not found by the second framing", name, r.Offset, r.DataOffset, r.Key))
		}
	}
	return out
}
