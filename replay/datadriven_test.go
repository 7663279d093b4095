package replay

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/internal/ddtest"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

// runFile runs the cases of a testdata file through ddtest.Run (the
// repository's one runner; -update rewrites the file), handing run the
// command, its arguments (name=value; the others joined in "_") and the
// input lines.
func runFile(t *testing.T, path string, run func(t *testing.T, cmd string, args map[string]string, input string) string) {
	t.Helper()
	ddtest.Run(t, path, func(t *testing.T, c *ddtest.Case) string {
		args := map[string]string{}
		var pos []string
		for _, f := range c.Args {
			if k, v, ok := strings.Cut(f, "="); ok && !strings.Contains(k, "/") && !strings.Contains(k, "?") {
				args[k] = v
			} else {
				pos = append(pos, f)
			}
		}
		args["_"] = strings.Join(pos, " ")
		return run(t, c.Cmd, args, strings.TrimSuffix(c.Input, "\n"))
	})
}

// TestRewriteDataDriven pins the link rewriting of HTML, CSS and headers
// (testdata/rewrite.txt).
func TestRewriteDataDriven(t *testing.T) {
	runFile(t, filepath.Join("testdata", "rewrite.txt"), func(t *testing.T, cmd string, args map[string]string, input string) string {
		prefix, ts, base := args["prefix"], args["ts"], args["base"]
		if prefix == "" {
			prefix = "/web/"
		}
		if ts == "" {
			ts = "20240501120000"
		}
		rw, err := NewRewriter(prefix, ts, base)
		if err != nil {
			return "error: " + err.Error()
		}
		switch cmd {
		case "html":
			return string(rw.HTML([]byte(input)))
		case "css":
			return string(rw.CSS([]byte(input)))
		case "url":
			var out []string
			for _, l := range strings.Split(input, "\n") {
				out = append(out, rw.URL(l, args["mod"]))
			}
			return strings.Join(out, "\n")
		case "headers":
			hdr := http.Header{}
			for _, l := range strings.Split(input, "\n") {
				k, v, _ := strings.Cut(l, ": ")
				hdr.Add(k, v)
			}
			var h http.Header
			switch args["mode"] {
			case "raw":
				h = ArchivedHeaders(hdr, nil, false)
			case "rewritten":
				h = ArchivedHeaders(hdr, rw, true)
			default:
				h = ArchivedHeaders(hdr, rw, false)
			}
			return formatHeader(h, nil)
		}
		t.Fatalf("unknown command %q", cmd)
		return ""
	})
}

func formatHeader(h http.Header, skip map[string]bool) string {
	var lines []string
	for k, vs := range h {
		if skip[k] {
			continue
		}
		for _, v := range vs {
			lines = append(lines, k+": "+v)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// corpusFiles are the WARC files of ../shared/corpus/warc the access tests
// index: pywb's recorder (responses, revisits of originals in another
// file, a redirect), Heritrix's revisit samples (originals absent), warcio.
var corpusFiles = []string{"pywb-iana.warc.gz", "pywb-dupes.warc.gz", "warcio-example.warc.gz",
	"20141124-heritrix-server-not-modified.warc.gz", "20130729-heritrix-revisit-with-http-headers.warc.gz"}

// corpusHandler indexes corpusFiles into a capture index (collection
// "pywb") and returns handlers over it: one with the defaults, and one
// with TimeMap pages of 2 mementos and CDX answers of at most 5 lines.
func corpusHandler(t testing.TB) (*Handler, *Handler) {
	t.Helper()
	dir := filepath.Join(testenv.SharedDir(t), "corpus", "warc")
	ctx := context.Background()
	ix, err := captureindex.Open(filepath.Join(t.TempDir(), "ci"), captureindex.WithScope("pywb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ix.Check(ctx); err != nil {
			t.Errorf("capture index: %v", err)
		}
		ix.Close()
	})
	for _, name := range corpusFiles {
		r, err := warcio.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var cs []wayside.Capture
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			cs = append(cs, rec.Capture(name))
		}
		r.Close()
		if _, err := ix.Add(ctx, cs...); err != nil {
			t.Fatal(err)
		}
	}
	h, err := New(Options{Index: ix, WARCDirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	small, err := New(Options{Index: ix, WARCDirs: []string{dir}, PageSize: 2, MaxResults: 5})
	if err != nil {
		t.Fatal(err)
	}
	return h, small
}

// textTypes are bodies printed as they are; others by length and digest.
var textTypes = []string{"text/x-cdxj", "text/x-ndjson", "text/plain", "application/link-format", "application/json"}

// TestAccessDataDriven pins the answers of the access routes over real WARC
// files (testdata/access.txt): CDX API queries, TimeMaps, TimeGate
// negotiation, raw and rewritten mementos, bad input. "get PATH
// [mount=/paged] [body=full]" sends a GET (input lines are request
// headers) and prints the status, the headers but Date, and the body.
func TestAccessDataDriven(t *testing.T) {
	h, small := corpusHandler(t)
	runFile(t, filepath.Join("testdata", "access.txt"), func(t *testing.T, cmd string, args map[string]string, input string) string {
		method := strings.ToUpper(cmd)
		req := httptest.NewRequest(method, "http://archive.test"+args["mount"]+args["_"], nil)
		for _, l := range strings.Split(input, "\n") {
			if k, v, ok := strings.Cut(l, ": "); ok {
				req.Header.Add(k, v)
			}
		}
		rr := httptest.NewRecorder()
		hh := h
		if args["mount"] != "" {
			hh = small
		}
		if err := hh.Serve(rr, req, args["mount"]); err != nil {
			var e *Error
			if !errors.As(err, &e) {
				return "internal error: " + err.Error()
			}
			WriteError(rr, err)
		}
		res := rr.Result()
		body, _ := io.ReadAll(res.Body)
		out := fmt.Sprintf("status %d\n%s", res.StatusCode, formatHeader(res.Header, map[string]bool{"Date": true}))
		full := args["body"] == "full"
		for _, tt := range textTypes {
			full = full || strings.HasPrefix(res.Header.Get("Content-Type"), tt)
		}
		switch {
		case len(body) == 0:
		case full:
			out += "\n\n" + string(body)
		default:
			out += fmt.Sprintf("\n\nbody %d bytes, sha1 %x", len(body), sha1.Sum(body))
		}
		return out
	})
}
