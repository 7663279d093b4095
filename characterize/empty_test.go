package characterize

import (
	"github.com/wayside-archive/wayside/warcio"
	"path/filepath"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/digest"
)

// An empty (0-byte) payload gets an identification (EmptyFormat), and a
// revisit of it resolves to it (issue 21: no identification, and the
// revisit "unresolved" although its original was in the same file).
func TestEmptyPayloadIdentifiedAndRevisitResolved(t *testing.T) {
	orig := response("http://example.org/empty", "text/plain", nil)
	var origID string
	for _, f := range orig.Fields {
		if f.Name == "WARC-Record-ID" {
			origID = f.Value
		}
	}
	if origID == "" {
		origID = orig.ID
	}
	rev := &warcio.Draft{Type: "revisit", ID: warcio.NewRecordID(), Date: time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC),
		Fields: []warcio.Field{
			{Name: "WARC-Target-URI", Value: "http://example.org/empty"},
			{Name: "WARC-Profile", Value: "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"},
			{Name: "WARC-Refers-To", Value: origID},
			{Name: "WARC-Refers-To-Target-URI", Value: "http://example.org/empty"},
			{Name: "WARC-Refers-To-Date", Value: "2024-05-01T12:00:00Z"},
			{Name: "WARC-Payload-Digest", Value: digest.Of(digest.SHA1, nil).String()},
			{Name: "Content-Type", Value: "application/http; msgtype=response"},
		},
		Block: []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n")}
	path := writeWARC(t, orig, rev)
	st := openStore(t, "", StoreOptions{})
	c := newCharacterizer(t, st, Options{Identifier: testIdentifier(t, Limits{})})
	if problems := scanAll(t, c, path); len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	var o, r *Record
	for _, x := range st.Records(filepath.Base(path)) {
		x := x
		switch x.Type {
		case "response":
			o = &x
		case "revisit":
			r = &x
		}
	}
	if o == nil || r == nil {
		t.Fatalf("records: original %v, revisit %v", o, r)
	}
	if o.PUID != Unknown || o.Format.Warning != EmptyFormat.Warning {
		t.Errorf("empty payload identified as %q (%+v), want %+v", o.PUID, o.Format, EmptyFormat)
	}
	if r.Unresolved || r.Original == "" || r.PUID != o.PUID {
		t.Errorf("revisit of the empty payload: unresolved %v, original %q, puid %q; want it resolved to %s %d", r.Unresolved, r.Original, r.PUID, o.File, o.Offset)
	}
}
