package dedupindex_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/ddtest"
)

// openTestIndex opens a fresh pebble index that is checked and closed at
// cleanup.
func openTestIndex(t *testing.T) *pebble.Index {
	t.Helper()
	ix, err := pebble.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ix.Check(context.Background()); err != nil {
			t.Errorf("Check: %v", err)
		}
		if err := ix.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return ix
}

func parseDate(t *testing.T, s string) time.Time {
	t.Helper()
	if s == "" {
		return time.Time{}
	}
	d, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("bad date %q: %v", s, err)
	}
	return d
}

// payloadDigest returns the digest named by a command: digest= verbatim, or
// the SHA-1 of payload= in encoding enc= (canonical, hex or base32).
func payloadDigest(c *ddtest.Case) string {
	if c.Has("digest") {
		return c.Arg("digest", "")
	}
	d := digest.Of(digest.SHA1, []byte(c.Arg("payload", "")))
	switch c.Arg("enc", "") {
	case "hex":
		return "sha1:" + d.Hex()
	case "base32":
		return d.Base32()
	}
	return d.String()
}

func TestPolicyDataDriven(t *testing.T) {
	files, err := filepath.Glob("testdata/policy*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/policy*.txt: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			ctx := context.Background()
			ix := openTestIndex(t)
			d, err := dedupindex.NewDeduper(ix, dedupindex.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			var last dedupindex.Decision // the last decision holding a claim
			ddtest.Run(t, f, func(t *testing.T, c *ddtest.Case) string {
				switch c.Cmd {
				case "policy":
					var p dedupindex.Policy
					if p.Match, err = dedupindex.ParseMatch(c.Arg("match", "")); err != nil {
						return err.Error()
					}
					p.MinPayloadSize, _ = strconv.ParseInt(c.Arg("min", "0"), 10, 64)
					if c.Has("statuses") {
						if p.Statuses, err = dedupindex.ParseStatuses(c.Arg("statuses", "")); err != nil {
							return err.Error()
						}
					}
					p.Scope = c.Arg("scope", "")
					if c.Has("ro") {
						p.ReadOnlyScopes = strings.Split(c.Arg("ro", ""), ",")
					}
					if c.Has("window") {
						if p.Window, err = time.ParseDuration(c.Arg("window", "")); err != nil {
							return err.Error()
						}
					}
					nd, err := dedupindex.NewDeduper(ix, p)
					if err != nil {
						return err.Error()
					}
					d = nd
					ep := d.Policy()
					return fmt.Sprintf("match=%s min=%d statuses=%v scope=%s ro=%v window=%s",
						ep.Match, ep.MinPayloadSize, ep.Statuses, ep.Scope, ep.ReadOnlyScopes, ep.Window)
				case "put":
					k, err := d.Key(c.Arg("scope", d.Policy().Scope), c.Arg("uri", ""), payloadDigest(c))
					if err != nil {
						return err.Error()
					}
					added, err := ix.Put(ctx, k, dedupindex.Original{
						TargetURI: c.Arg("uri", ""), Date: parseDate(t, c.Arg("date", "")),
						RecordID: c.Arg("id", ""), Status: 200,
					})
					if err != nil {
						return err.Error()
					}
					if added {
						return "added"
					}
					return "kept existing"
				case "decide":
					pl := int64(len(c.Arg("payload", "")))
					if c.Has("len") {
						pl, _ = strconv.ParseInt(c.Arg("len", ""), 10, 64)
					}
					status, _ := strconv.Atoi(c.Arg("status", "200"))
					dec, err := d.Decide(ctx, dedupindex.Candidate{
						URI: c.Arg("uri", ""), Digest: payloadDigest(c), PayloadLength: pl,
						Status: status, Date: parseDate(t, c.Arg("date", "")),
					})
					if err != nil {
						return "error: " + err.Error()
					}
					if dec.Action == dedupindex.WriteResponseAndCommit {
						last = dec
					}
					s := fmt.Sprintf("%s %s", dec.Action, dec.Reason)
					if dec.Action == dedupindex.WriteRevisit {
						s += fmt.Sprintf(" scope=%s original=%s@%s", dec.Scope, dec.Original.TargetURI, dec.Original.Date.Format(time.RFC3339))
						if dec.Original.RecordID != "" {
							s += " id=" + dec.Original.RecordID
						}
					}
					if dec.Key.URL != "" {
						s += " url-key=" + dec.Key.URL
					}
					return s
				case "commit":
					err := d.Commit(ctx, last.Ticket, dedupindex.Original{
						TargetURI: c.Arg("uri", ""), Date: parseDate(t, c.Arg("date", "")), RecordID: c.Arg("id", ""),
					})
					if err != nil {
						return "error: " + err.Error()
					}
					return "committed"
				case "cancel":
					if err := d.Cancel(ctx, last.Ticket); err != nil {
						return "error: " + err.Error()
					}
					return "cancelled"
				}
				t.Fatalf("%s: unknown command %q", c.Pos, c.Cmd)
				return ""
			})
		})
	}
}

func TestDeduperCommitReadOnlyScope(t *testing.T) {
	ix := openTestIndex(t)
	d, err := dedupindex.NewDeduper(ix, dedupindex.Policy{Scope: "rw", ReadOnlyScopes: []string{"ro"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ix.Claim(context.Background(), dedupindex.Key{Scope: "ro", Digest: digest.Of(digest.SHA1, []byte("x")).String()})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Commit(context.Background(), r.Ticket, dedupindex.Original{TargetURI: "http://e/", Date: time.Now()})
	if !errors.Is(err, dedupindex.ErrReadOnly) {
		t.Fatalf("Commit into a read-only scope = %v, want ErrReadOnly", err)
	}
}

func TestPolicyValidation(t *testing.T) {
	ix := openTestIndex(t)
	for name, p := range map[string]dedupindex.Policy{
		"ro equals rw":    {Scope: "a", ReadOnlyScopes: []string{"a"}},
		"empty ro":        {ReadOnlyScopes: []string{""}},
		"negative window": {Window: -time.Second},
		"bad range":       {Statuses: []dedupindex.StatusRange{{300, 200}}},
		"bad match":       {Match: 7},
	} {
		if _, err := dedupindex.NewDeduper(ix, p); err == nil {
			t.Errorf("%s: NewDeduper accepted %+v", name, p)
		}
	}
	for _, s := range []string{"", "2x", "99", "200-", "abc", "300-200", "1000", "9xx", "0xx", "6xx"} {
		if _, err := dedupindex.ParseStatuses(s); err == nil {
			t.Errorf("ParseStatuses(%q) succeeded", s)
		}
	}
	for _, s := range []string{"5xx", "999", "200-999"} {
		if _, err := dedupindex.ParseStatuses(s); err != nil {
			t.Errorf("ParseStatuses(%q): %v", s, err)
		}
	}
}

// TestDeduperWindowWithoutReplace: with an index that cannot replace an
// expired original (no WindowClaimer), the capture is written in full and
// nothing is claimed, so the old original stays.
func TestDeduperWindowWithoutReplace(t *testing.T) {
	ctx := context.Background()
	ix := openTestIndex(t)
	plain := struct{ dedupindex.Index }{ix} // hides the optional interfaces
	d, err := dedupindex.NewDeduper(plain, dedupindex.Policy{Window: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	dg := digest.Of(digest.SHA1, []byte("old"))
	old := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := ix.Put(ctx, dedupindex.Key{Scope: dedupindex.DefaultScope, Digest: dg.String()}, dedupindex.Original{TargetURI: "http://e/", Date: old}); err != nil {
		t.Fatal(err)
	}
	c := dedupindex.Candidate{URI: "http://e/2", Digest: dg.String(), PayloadLength: 3, Status: 200}
	c.Date = old.Add(time.Hour)
	if dec, err := d.Decide(ctx, c); err != nil || dec.Action != dedupindex.WriteRevisit {
		t.Fatalf("within the window: %+v, %v", dec, err)
	}
	c.Date = old.Add(48 * time.Hour)
	dec, err := d.Decide(ctx, c)
	if err != nil || dec.Action != dedupindex.WriteResponse || dec.Reason != dedupindex.ReasonUnsupported {
		t.Fatalf("outside the window: %+v, %v; want write-response unsupported", dec, err)
	}
	if st, _ := ix.Stats(ctx); st.Pending != 0 {
		t.Fatalf("a claim was left pending: %+v", st)
	}
}
