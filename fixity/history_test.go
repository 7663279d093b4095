package fixity

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/fixity/merkle"
)

// synthManifest builds a small sealed manifest without a browser.
func synthManifest(urim string, n int, variant string) *Manifest {
	m := &Manifest{Format: ManifestFormat, URIM: urim, CanonicalURIM: urim, Archive: "synthetic",
		Context: Context{Browser: "none", PolicyVersion: PolicyVersion, Started: time.Unix(int64(n), 0).UTC(), Settled: "quiet"}}
	for i := range 3 {
		body := merkle.Sum([]byte(fmt.Sprintf("body-%d-%s", i, variant)))
		res := Resource{Key: fmt.Sprintf("http://example.com/r%d", i), URL: fmt.Sprintf("%s/r%d", urim, i),
			URIM: fmt.Sprintf("%s/r%d", urim, i), Datetime: "20200101000000",
			Rewritten: &Response{FinalURIM: fmt.Sprintf("%s/r%d", urim, i), Outcome: OutcomeOK, Status: 200,
				Headers: []Header{{Name: "content-type", Value: "image/png"}}, Body: BodyHashed, BodyHash: body}}
		m.Resources = append(m.Resources, res)
	}
	m.Seal()
	return m
}

func TestHistoryTornLastLine(t *testing.T) {
	dir := t.TempDir()
	h, err := OpenHistory(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		m := synthManifest("https://a.example/web/20200101000000/http://x/", i, "")
		rel, err := h.SaveManifest(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Append(Record{Kind: KindReplay, URIM: m.CanonicalURIM, Root: m.Root.String(), Class: ClassNone, Manifest: rel}); err != nil {
			t.Fatal(err)
		}
	}
	h.Close()
	// A crash in the middle of a write leaves half a line.
	f, err := os.OpenFile(filepath.Join(dir, "history.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"kind":"replay","urim":"https://a.exa`)
	f.Close()

	if recs, err := ReadHistory(dir); err != nil || len(recs) != 3 {
		t.Fatalf("ReadHistory with a torn last line: %d records, %v", len(recs), err)
	}
	var logBuf bytes.Buffer
	h, err = OpenHistory(dir, slog.New(slog.NewTextHandler(&logBuf, nil)))
	if err != nil {
		t.Fatalf("reopen after a torn line: %v", err)
	}
	if !strings.Contains(logBuf.String(), "torn last line") {
		t.Errorf("no warning about the torn line; log: %s", logBuf.String())
	}
	if n := len(h.Records()); n != 3 {
		t.Fatalf("%d records after reopen, want 3", n)
	}
	if err := h.Append(Record{Kind: KindAccept, URIM: "https://a.example/web/20200101000000/http://x/", Root: merkle.Sum(nil).String(), Reason: "operator"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Check(); err != nil {
		t.Fatal(err)
	}
	h.Close()
	h, err = OpenHistory(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if n := len(h.Records()); n != 4 {
		t.Fatalf("%d records after append and reopen, want 4 (the torn line must be cut, not glued to the next record)", n)
	}
	st := h.State("https://a.example/web/20200101000000/http://x/")
	if st.Last == nil || len(st.Accepted) != 1 {
		t.Fatalf("state after reload: %+v", st)
	}
}

func TestHistoryCorruptMiddleLine(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte("{\"kind\":\"accept\",\"urim\":\"u\",\"root\":\"x\"}\nnot json\n{\"kind\":\"accept\",\"urim\":\"u\"}\n"), 0o644)
	_, err := OpenHistory(dir, nil)
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "history.jsonl") {
		t.Fatalf("corrupt middle line: err %v, want an error naming the file and line 2", err)
	}
}

func TestHistoryLocked(t *testing.T) {
	dir := t.TempDir()
	h, err := OpenHistory(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h2, err := OpenHistory(dir, nil); err == nil {
		h2.Close()
		t.Fatal("a second OpenHistory of the same store succeeded")
	}
}

// TestHistoryCrash kills a process that appends replay records in a loop
// and checks that the store reopens, every record's manifest exists and
// recomputes to the recorded root.
func TestHistoryCrash(t *testing.T) {
	if dir := os.Getenv("WAYSIDE_FIXITY_CRASH_DIR"); dir != "" {
		h, err := OpenHistory(dir, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		for i := 0; ; i++ {
			m := synthManifest("https://a.example/web/20200101000000/http://x/", i, fmt.Sprint(i%3))
			rel, err := h.SaveManifest(m)
			if err != nil {
				os.Exit(4)
			}
			if err := h.Append(Record{Kind: KindReplay, URIM: m.CanonicalURIM, Root: m.Root.String(), Class: ClassNone, Manifest: rel}); err != nil {
				os.Exit(5)
			}
		}
	}
	dir := t.TempDir()
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHistoryCrash$")
		cmd.Env = append(os.Environ(), "WAYSIDE_FIXITY_CRASH_DIR="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(150+100*round) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		h, err := OpenHistory(dir, nil)
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		n := len(h.Records())
		if err := h.Check(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		h.Close()
		if n == 0 {
			t.Fatalf("round %d: the killed writer left no record", round)
		}
	}
}
