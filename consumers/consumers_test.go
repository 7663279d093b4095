package consumers_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/consumers"
)

// The Set catches its consumers up from the producer's CDXJ files, feeds
// them, and on Close names the one that failed; the live map knows every
// capture, from the CDXJ and from delivery.
func TestSetCatchUpDeliverAndReportFailure(t *testing.T) {
	dir := t.TempDir()
	old := wayside.Capture{URI: "http://example.com/before", Type: "response", Status: 200, MIME: "text/html",
		Date: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), File: "a.warc.gz", Offset: 100, Length: 10}
	l := cdxj.FromCapture(old)
	if err := os.WriteFile(filepath.Join(dir, "a.cdxj"), []byte(l.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := consumers.Open(consumers.Config{LiveMap: consumers.LiveMapConfig{Path: filepath.Join(dir, "m.ukvs")}}); err == nil {
		t.Fatal("a live map without CDXJ directories to catch up from was accepted")
	}
	s, err := consumers.Open(consumers.Config{CDXJDirs: []string{dir},
		LiveMap: consumers.LiveMapConfig{Path: filepath.Join(dir, "m.ukvs")},
		Extra: []consumers.Named{{Name: "broken", Sub: wayside.SubscriberFunc(func(context.Context, wayside.Capture) error {
			return errors.New("no space left")
		})}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	now := old
	now.URI, now.Offset = "http://example.com/now", 200
	if err := s.Fanout.OnCapture(ctx, now); err != nil {
		t.Fatal(err)
	}
	if err := s.Fanout.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{old.URI, now.URI} {
		if m, err := s.Live.Lookup(u); err != nil || !m.Present {
			t.Errorf("live map: %s absent (%v)", u, err)
		}
	}
	err = s.Close()
	if err == nil || !strings.Contains(err.Error(), "consumer broken") || strings.Contains(err.Error(), consumers.NameLiveMap) {
		t.Fatalf("Close: %v, want the broken consumer (only) named", err)
	}
	if st := s.Stats(); len(st) != 2 || st[0].Name != consumers.NameLiveMap || st[0].Delivered != 1 || st[1].Failed != 1 {
		t.Errorf("stats %+v", st)
	}
}

// Config.RecordBudget reaches the Fanout and the characterizer: by default
// the characterizer takes the crawl writer's record bytes (and the Fanout
// says so to the producer); a negative budget turns the hand-over off, so
// the producer does not keep the bytes at all.
func TestSetRecordBudget(t *testing.T) {
	for _, tc := range []struct {
		budget int64
		want   bool
	}{{0, true}, {1 << 20, true}, {-1, false}} {
		dir := t.TempDir()
		s, err := consumers.Open(consumers.Config{CDXJDirs: []string{dir}, RecordBudget: tc.budget,
			Characterize: consumers.CharacterizeConfig{Store: filepath.Join(dir, "charz"), WARCDirs: []string{dir}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Fanout.WantsRecordBytes(); got != tc.want {
			t.Errorf("budget %d: Fanout.WantsRecordBytes %v, want %v", tc.budget, got, tc.want)
		}
		if got := s.Characterizer.WantsRecordBytes(); got != tc.want {
			t.Errorf("budget %d: Characterizer.WantsRecordBytes %v, want %v", tc.budget, got, tc.want)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
