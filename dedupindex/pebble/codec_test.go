package pebble

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/internal/ddtest"
)

// TestCodecDataDriven pins the on-disk encoding of keys (values are pinned
// by dedupindex/internal/record): a change here breaks existing indexes
// and needs a format version bump.
func TestCodecDataDriven(t *testing.T) {
	ddtest.Run(t, "testdata/codec.txt", func(t *testing.T, c *ddtest.Case) string {
		switch c.Cmd {
		case "key":
			k := dedupindex.Key{Scope: c.Arg("scope", "s"), Digest: c.Arg("digest", ""), URL: c.Arg("url", "")}
			pk, err := parseKey(k)
			if err != nil {
				return "error: " + err.Error()
			}
			id, _ := strconv.ParseUint(c.Arg("scopeid", "1"), 10, 64)
			p := primaryKey(id, pk)
			s := secondaryKey(id, hash8(c.Arg("surt", "")), pk)
			ds, err := decodeSecondaryKey(s)
			if err != nil || !bytes.HasPrefix(p, ds.primary) {
				return fmt.Sprintf("secondary round trip failed: %v", err)
			}
			dp, err := decodePrimaryKey(p)
			if err != nil || dp.scopeID != id || dp.pk.digest() != pk.digest() || dp.pk.hasURL != pk.hasURL {
				return fmt.Sprintf("primary round trip failed: %v", err)
			}
			return fmt.Sprintf("primary %d bytes: %x\nsecondary %d bytes: %x", len(p), p, len(s), s)
		}
		t.Fatalf("unknown command %q", c.Cmd)
		return ""
	})
}

func FuzzDecodeKeys(f *testing.F) {
	pk, _ := parseKey(dedupindex.Key{Scope: "s", Digest: "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ", URL: "com,example)/"})
	f.Add(primaryKey(7, pk))
	f.Add(secondaryKey(300, hash8("com,example)/"), pk))
	f.Add([]byte{tagSecondary, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		if dp, err := decodePrimaryKey(b); err == nil {
			if got := primaryKey(dp.scopeID, dp.pk); string(got) != string(b) {
				t.Fatalf("primary key %x re-encodes as %x", b, got)
			}
		}
		if ds, err := decodeSecondaryKey(b); err == nil {
			if got := secondaryKey(ds.scopeID, ds.surtHash, parsedKey{alg: ds.primary[len(ds.primary)-secDigestLen-1], sum: ds.primary[len(ds.primary)-secDigestLen:]}); string(got) != string(b) {
				t.Fatalf("secondary key %x re-encodes as %x", b, got)
			}
		}
	})
}
