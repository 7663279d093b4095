package fixity

import (
	"bufio"
	"bytes"
	"errors"
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

// crashBudget is the evidence budget of the crash test's writer.
const crashBudget = 3000

// crashWriter appends replay records with evidence in a loop, enforcing an
// evidence budget, and prints "appended N" once record N is durable. It is
// the child process of TestHistoryCrash.
func crashWriter(dir string) {
	h, err := OpenHistory(dir, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	n := 0
	for _, r := range h.Records() {
		if r.Kind == KindReplay {
			n++
		}
	}
	for i := n; ; i++ {
		m := synthManifest("https://a.example/web/20200101000000/http://x/", i, fmt.Sprint(i%3))
		stage, err := h.StageEvidence()
		if err != nil {
			os.Exit(4)
		}
		body := bytes.Repeat([]byte{byte(i)}, 1000)
		if err := os.MkdirAll(filepath.Join(stage, "raw"), 0o755); err != nil {
			os.Exit(4)
		}
		if err := os.WriteFile(filepath.Join(stage, "raw", "x.warc.gz"), body, 0o644); err != nil {
			os.Exit(4)
		}
		m.Evidence = &Evidence{Dir: stage, Files: []EvidenceFile{{Capture: CaptureRaw, Name: "raw/x.warc.gz", Size: int64(len(body)), SHA256: sha256Hex(body), Records: 1}}}
		rel, ev, err := h.SaveReplay(m, stage)
		if err != nil {
			os.Exit(4)
		}
		if err := h.Append(Record{Kind: KindReplay, URIM: m.CanonicalURIM, Root: m.Root.String(), Class: ClassNone, Manifest: rel,
			Evidence: filepath.ToSlash(ev), EvidenceBytes: m.Evidence.Bytes()}); err != nil {
			os.Exit(5)
		}
		if err := h.EnforceEvidenceBudget(crashBudget); err != nil {
			os.Exit(6)
		}
		fmt.Printf("appended %d\n", i+1)
	}
}

// TestHistoryCrash kills (SIGKILL) a process that appends replay records
// with evidence in a loop, each time right after it reported a record
// durable (so the kill lands in the middle of the next save, append or
// eviction), and checks that the store reopens with every reported record,
// that every record's manifest exists and recomputes to its root, that kept
// evidence matches its digests, and that what a crash left on disk is
// within the evidence budget.
func TestHistoryCrash(t *testing.T) {
	if dir := os.Getenv("WAYSIDE_FIXITY_CRASH_DIR"); dir != "" {
		crashWriter(dir)
		return
	}
	dir := t.TempDir()
	reported := 0
	for round, after := range []int{3, 5, 9} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHistoryCrash$")
		cmd.Env = append(os.Environ(), "WAYSIDE_FIXITY_CRASH_DIR="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		seen := 0
		deadline := time.After(2 * time.Minute) // a hung child fails the test instead of hanging it
	wait:
		for seen < after {
			select {
			case l, ok := <-lines:
				if !ok {
					break wait
				}
				if _, err := fmt.Sscanf(l, "appended %d", &reported); err == nil {
					seen++
				}
			case <-deadline:
				break wait
			}
		}
		cmd.Process.Kill()
		for range lines { // drain
		}
		cmd.Wait()
		if seen < after {
			t.Fatalf("round %d: the writer reported %d records before it stopped, want %d", round, seen, after)
		}
		h, err := OpenHistory(dir, nil)
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		n := 0
		for _, r := range h.Records() {
			if r.Kind == KindReplay {
				n++
			}
		}
		if err := h.Check(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if n < reported {
			t.Fatalf("round %d: %d replay records after reopen, the writer reported %d durable", round, n, reported)
		}
		if got := h.EvidenceBytes(); got > crashBudget {
			t.Fatalf("round %d: %d bytes of evidence kept, budget %d", round, got, crashBudget)
		}
		if onDisk := dirBytes(t, filepath.Join(dir, evidenceRoot)); onDisk != h.EvidenceBytes() {
			t.Fatalf("round %d: %d evidence bytes on disk after reopen, the log accounts for %d", round, onDisk, h.EvidenceBytes())
		}
		h.Close()
	}
}

// dirBytes sums the sizes of the regular files under dir.
func dirBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
