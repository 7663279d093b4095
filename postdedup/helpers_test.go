package postdedup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

// groundTruth is what warcgen writes beside its WARC (<out>.stats.json).
type groundTruth struct {
	Records             int            `json:"records"`
	ByType              map[string]int `json:"records_by_type"`
	Responses           int            `json:"responses"`
	DupResponses        int            `json:"duplicate_responses"`
	DupSameURL          int            `json:"duplicate_same_url_later"`
	DupOtherURL         int            `json:"duplicate_other_url"`
	DupPayloadBytes     int64          `json:"duplicate_payload_bytes"`
	DupPayloadBytesGE2K int64          `json:"duplicate_payload_bytes_payload_ge_2KiB"`
	DupResponsesGE2K    int            `json:"duplicate_responses_payload_ge_2KiB"`
	CompressedBytes     int64          `json:"output_file_bytes"`
}

var (
	genMu    sync.Mutex
	genCache = map[string]string{}
	genDir   string
)

// TestMain runs crashChild when TestCrashKill started the binary as its
// child; otherwise the tests, then removes the warcgen files they shared.
func TestMain(m *testing.M) {
	if spec := os.Getenv(crashEnv); spec != "" {
		if err := crashChild(spec); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if genDir != "" {
		os.RemoveAll(genDir)
	}
	os.Exit(code)
}

// warcgen generates a WARC with ../shared/tools/warcgen (once per set of
// flags per test binary) and returns its path and ground truth.
func warcgen(t testing.TB, name string, args ...string) (string, groundTruth) {
	t.Helper()
	shared := testenv.SharedDir(t)
	genMu.Lock()
	defer genMu.Unlock()
	key := fmt.Sprint(name, args)
	path, ok := genCache[key]
	if !ok {
		if genDir == "" {
			d, err := os.MkdirTemp("", "wayside-postdedup-warcgen-")
			if err != nil {
				t.Fatal(err)
			}
			genDir = d
		}
		path = filepath.Join(genDir, name)
		cmd := exec.Command("go", append([]string{"run", ".", "-o", path}, args...)...)
		cmd.Dir = filepath.Join(shared, "tools", "warcgen")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("warcgen: %v\n%s", err, out)
		}
		genCache[key] = path
	}
	var gt groundTruth
	b, err := os.ReadFile(path + ".stats.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &gt); err != nil {
		t.Fatal(err)
	}
	return path, gt
}

// copyInputs copies files into a new directory (tests never touch the
// shared or generated originals) and returns the copies' paths.
func copyInputs(t testing.TB, dir string, files ...string) []string {
	t.Helper()
	return testenv.CopyFiles(t, dir, files...)
}

// runAll runs the pipeline with deep validation.
func runAll(t testing.TB, inputs []string, outDir string, opts RunOptions) RunReport {
	t.Helper()
	opts.Validate.Deep = true
	rep, err := Run(context.Background(), inputs, outDir, opts)
	if err != nil {
		t.Fatalf("dedup run: %v (validation problems: %v)", err, rep.Validate.Problems)
	}
	return rep
}

// readAllRecords reads every record of a WARC with warcio, failing on any
// read error.
func readAllRecords(t testing.TB, path string, opts warcio.Options) []*warcio.Record {
	t.Helper()
	r, err := warcio.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []*warcio.Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, rec)
	}
}

// sha256File returns a file's SHA-256 (inputs must never change).
func sha256File(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

var _ = bytes.Equal

func warcioOpts() warcio.Options { return warcio.Options{KeepPayload: 1 << 20} }

// readUntilTruncated reads records up to a truncated tail, which must be
// there.
func readUntilTruncated(t testing.TB, path string) []*warcio.Record {
	t.Helper()
	r, err := warcio.Open(path, warcioOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []*warcio.Record
	for {
		rec, err := r.Next()
		if err != nil {
			if !errors.Is(err, warcio.ErrTruncated) {
				t.Fatalf("%s: %v, want a truncated tail", path, err)
			}
			return out
		}
		out = append(out, rec)
	}
}
