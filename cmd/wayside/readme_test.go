package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// readmeCommands returns the `wayside ...` command lines of the ```sh
// blocks of README.md, in order, continuation lines joined and trailing
// comments dropped.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in, cur := false, ""
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "```sh"):
			in = true
			continue
		case strings.HasPrefix(l, "```"):
			in = false
			continue
		case !in:
			continue
		}
		l = stripComment(l)
		if cont, ok := strings.CutSuffix(strings.TrimRight(l, " "), "\\"); ok {
			cur += cont + " "
			continue
		}
		l = strings.TrimSpace(cur + l)
		cur = ""
		if strings.HasPrefix(l, "wayside ") {
			out = append(out, l)
		}
	}
	return out
}

// stripComment drops a " # comment" outside quotes.
func stripComment(l string) string {
	var q byte
	for i := 0; i < len(l); i++ {
		switch c := l[i]; {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '\'' || c == '"':
			q = c
		case c == '#' && (i == 0 || l[i-1] == ' '):
			return strings.TrimRight(l[:i], " ")
		}
	}
	return l
}

var foreignURL = regexp.MustCompile(`(https?|redis)://([^/:'"\s]+)`)

// readmeSkip says why a README command line cannot run in the test
// (network beyond loopback, a running daemon, a browser, a placeholder),
// or "".
func readmeSkip(l string) string {
	for _, m := range foreignURL.FindAllStringSubmatch(l, -1) {
		if (m[1] == "redis" || strings.HasPrefix(l, "wayside crawl") || strings.HasPrefix(l, "wayside fixity")) && m[2] != "127.0.0.1" && m[2] != "localhost" {
			return "reaches " + m[2]
		}
	}
	switch {
	case strings.Contains(l, "s3://"):
		return "needs an object store (the S3 tests run one)"
	case strings.Contains(l, "..."), strings.Contains(l, "[--"):
		return "a placeholder (… or [optional flags])"
	case strings.HasPrefix(l, "wayside serve"), strings.HasPrefix(l, "wayside status"), strings.Contains(l, ".sock"):
		return "needs a daemon with the paths of a real installation"
	case strings.HasPrefix(l, "wayside aggregate"):
		return "asks remote archives"
	case strings.Contains(l, "/data/"), strings.Contains(l, "/var/lib/"), strings.Contains(l, "/opt/"):
		return "a system path"
	case strings.HasPrefix(l, "wayside fixity compare"), strings.HasPrefix(l, "wayside fixity verify"):
		return "reads the manifests of the replays above (web.archive.org)"
	case strings.HasPrefix(l, "wayside fixity sweep"), strings.HasPrefix(l, "wayside fixity report"):
		return "the store of a sweep of web.archive.org"
	case strings.Contains(l, "--warc-dir warcs"), strings.Contains(l, "WAYSIDE-20240501-"):
		return "the crawl of example.org above"
	}
	return ""
}

// readmeFailing lists README lines whose documented outcome is exit 1.
var readmeFailing = map[string]string{
	"wayside index lookup --index wayside-index sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ": "a digest not in the index: \"not found\", exit 1 as documented",
	"wayside index lookup --index wayside-index --url https://example.org/":            "a URL not in the index: \"not found\", exit 1 as documented",
}

// TestREADMEExamples runs every shell example of README.md that needs only
// loopback, as written, in README order, in a directory laid out as the
// examples assume (warcs/, old/, old-crawl/ from ../shared's corpus; the
// other inputs made by the examples before them or from the corpus): each
// exits 0 (or 1 where the README says so). Every other line is skipped
// with its reason, printed; a README with no runnable example fails.
func TestREADMEExamples(t *testing.T) {
	bin := waysideBinary(t)
	corpus := filepath.Join(testenv.SharedDir(t), "corpus")
	work := t.TempDir()
	w := func(p string) string { return filepath.Join(work, p) }
	for _, d := range []string{"warcs", "old", "old-crawl", "meta"} {
		if err := os.Mkdir(w(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	warcs := []string{"pywb-iana.warc.gz", "pywb-dupes.warc.gz", "warcio-example.warc.gz"}
	for _, d := range []string{"warcs", "old", "old-crawl"} {
		testenv.CopyFiles(t, w(d), func() []string {
			var ps []string
			for _, n := range warcs {
				ps = append(ps, filepath.Join(corpus, "warc", n))
			}
			return ps
		}()...)
	}
	copyAs := func(src, dst string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(w(dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyAs(filepath.Join(corpus, "warc", "pywb-example-wget-1-14.warc.gz"), "old-crawl.warc.gz")
	copyAs(filepath.Join(corpus, "arc", "warcio-example.arc.gz"), filepath.Join("old", "IAH-2008.arc.gz"))
	runIn := func(args ...string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", strings.Join(args, " "))
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "TMPDIR="+t.TempDir())
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			return ee.ExitCode(), out.String()
		case err != nil:
			t.Fatalf("%v: %v", args, err)
		}
		return 0, out.String()
	}
	// Inputs the examples name that no example before them makes.
	for _, setup := range []string{
		"wayside cdxj -q -o pywb.cdxj old-crawl.warc.gz",
		"wayside cdxj -q -o dupes.cdxj old-crawl/pywb-dupes.warc.gz",
		"wayside cdxj -q -o shard-1.cdxj warcs/pywb-iana.warc.gz",
		"wayside cdxj -q -o shard-2.cdxj warcs/warcio-example.warc.gz",
		"wayside mementomap generate -q -o a.ukvs old/pywb-iana.warc.gz",
		"wayside mementomap generate -q -o reference-tool-map.ukvs old/warcio-example.warc.gz",
		"printf '1 http://www.iana.org/\\n0 http://nowhere.example/\\n' > labelled.txt",
		`printf '127.0.0.1 - - [01/Jan/2019:00:00:00 +0000] "GET /web/20190101000000/http://www.iana.org/ HTTP/1.1" 200 512\n127.0.0.1 - - [01/Jan/2019:00:00:01 +0000] "GET /web/20190101000000/http://nowhere.example/ HTTP/1.1" 404 0\n' > access.log`,
		"printf 'fmt/18\\n# a comment\\nfmt/19\\n' > at-risk-formats.txt",
	} {
		if code, out := runIn(setup); code != 0 {
			t.Fatalf("setup %q: exit %d\n%s", setup, code, out)
		}
	}
	cdxFromCDXJ(t, w("dupes.cdxj"), w("old.cdx"))
	ran := 0
	for _, l := range readmeCommands(t) {
		if why := readmeSkip(l); why != "" {
			t.Logf("skipped (%s): %s", why, l)
			continue
		}
		ran++
		code, out := runIn(l)
		want := 0
		if why, ok := readmeFailing[l]; ok {
			want = 1
			t.Logf("expected to exit 1 (%s): %s", why, l)
		}
		if code != want {
			t.Errorf("README example exits %d, want %d:\n  %s\n%s", code, want, l, out)
		}
	}
	if ran < 20 {
		t.Fatalf("only %d README examples ran: the extraction is broken", ran)
	}
}

// cdxFromCDXJ writes the lines of a CDXJ file as an 11-field CDX file with
// its header (the "old.cdx" the README imports).
func cdxFromCDXJ(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	out.WriteString(" CDX N b a m s k r M S V g\n")
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(l, " ", 3)
		var j struct{ URL, Mime, Status, Digest, Length, Offset, Filename string }
		if len(f) != 3 || json.Unmarshal([]byte(f[2]), &j) != nil {
			t.Fatalf("%s: bad line %q", src, l)
		}
		out.WriteString(strings.Join([]string{f[0], f[1], j.URL, dash(j.Mime), dash(j.Status), dash(strings.TrimPrefix(j.Digest, "sha1:")), "-", "-", dash(j.Length), dash(j.Offset), dash(j.Filename)}, " ") + "\n")
	}
	if err := os.WriteFile(dst, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
