package warcio

import (
	"bytes"
	"testing"
	"time"

	"github.com/nlnwa/gowarc"
)

// The revisit profile URIs are the specification's, as gowarc has them.
func TestProfilesAreGowarcs(t *testing.T) {
	for got, want := range map[string]string{
		ProfileIdenticalPayloadDigest10: gowarc.ProfileIdenticalPayloadDigestV1_0,
		ProfileIdenticalPayloadDigest11: gowarc.ProfileIdenticalPayloadDigestV1_1,
		ProfileServerNotModified10:      gowarc.ProfileServerNotModifiedV1_0,
		ProfileServerNotModified11:      gowarc.ProfileServerNotModifiedV1_1,
	} {
		if got != want {
			t.Errorf("profile %q, gowarc has %q", got, want)
		}
	}
}

// A warcinfo record never names a warcinfo record; any other record of
// the file does, after its fields.
func TestDraftWarcinfoID(t *testing.T) {
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	info := NewWarcinfo("x.warc.gz", Version11, "host", now, []Field{{Name: "operator", Value: "Ops"}})
	var b bytes.Buffer
	info.MarshalInFile(&b, Version11, "<urn:uuid:x>")
	if bytes.Contains(b.Bytes(), []byte("WARC-Warcinfo-ID")) || !bytes.Contains(b.Bytes(), []byte("operator: Ops\r\n")) {
		t.Errorf("warcinfo record:\n%s", b.Bytes())
	}
	r := &Draft{Type: "resource", ID: NewRecordID(), Date: now, Fields: []Field{{Name: "WARC-Target-URI", Value: "http://example.org/"}}, Block: []byte("x")}
	b.Reset()
	r.MarshalInFile(&b, Version11, "<urn:uuid:x>")
	rec, err := NewReader(bytes.NewReader(b.Bytes()), "t").Next()
	if err != nil || rec.Header("WARC-Warcinfo-ID") != "<urn:uuid:x>" || rec.TargetURI != "http://example.org/" || len(rec.Anomalies) != 0 {
		t.Errorf("record: %v %+v", err, rec)
	}
}
