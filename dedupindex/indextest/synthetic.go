package indextest

import (
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/digest"
)

var syntheticMIMEs = []string{"text/html", "image/jpeg", "image/png", "application/javascript", "text/css"}

// SyntheticDigest is the digest of synthetic payload i, for benchmarks
// (absent ones use i < 0).
func SyntheticDigest(i int) string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(i))
	s := sha1.Sum(b[:])
	return digest.Digest{Alg: digest.SHA1, Sum: s[:]}.String()
}

// SyntheticOriginal is a realistic original of payload i for benchmarks
// of every backend: ~70-byte URI on one of 50,000 hosts, UUID record id,
// one WARC file per 20,000 records, five MIME types, ETag and
// Last-Modified on a third. Record ids are canonical urn:uuid ids, as
// Wayside and Heritrix write them (the pebble benchmark's earlier copy of
// this workload wrote ids 2 hex digits short, which backends store as
// strings instead of 16 bytes).
func SyntheticOriginal(i int) dedupindex.Original {
	h := sha1.Sum([]byte(strconv.Itoa(i)))
	u := h // a random (version 4) UUID from the hash
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	o := dedupindex.Original{
		Digest:        SyntheticDigest(i),
		TargetURI:     fmt.Sprintf("https://www.site%d.example.org/section-%d/article-%d.html?ref=%d", i%50000, i%97, i, i%13),
		Date:          time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 37 * time.Millisecond).Truncate(time.Second),
		RecordID:      fmt.Sprintf("<urn:uuid:%x-%x-%x-%x-%x>", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]),
		File:          fmt.Sprintf("WAYSIDE-20250101000000-%05d.warc.gz", i/20000),
		Offset:        int64(i%20000) * 48_000,
		Length:        int64(2000 + i%30000),
		PayloadLength: int64(5000 + i%90000),
		Status:        200,
		MIME:          syntheticMIMEs[i%len(syntheticMIMEs)],
	}
	if i%3 == 0 {
		o.ETag = fmt.Sprintf(`"%x"`, h[:6])
		o.LastModified = o.Date.Add(-72 * time.Hour).Format(http.TimeFormat)
	}
	return o
}
