package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// initTrace is one line of GODEBUG=inittrace=1: a package's initialisation
// and what it allocated.
type initTrace struct {
	pkg           string
	bytes, allocs int64
}

var initTraceLine = regexp.MustCompile(`^init (\S+) @\S+ ms, \S+ ms clock, (\d+) bytes, (\d+) allocs$`)

// binaryInitTrace runs `wayside version` with GODEBUG=inittrace=1 and
// returns the packages it initialised.
func binaryInitTrace(t *testing.T) []initTrace {
	t.Helper()
	cmd := exec.Command(waysideBinary(t), "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("wayside version: %v\n%s", err, stderr.String())
	}
	var out []initTrace
	for _, line := range strings.Split(stderr.String(), "\n") {
		m := initTraceLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		b, _ := strconv.ParseInt(m[2], 10, 64)
		a, _ := strconv.ParseInt(m[3], 10, 64)
		out = append(out, initTrace{pkg: m[1], bytes: b, allocs: a})
	}
	if len(out) < 50 {
		t.Fatalf("only %d init lines in GODEBUG=inittrace=1 output (format changed?):\n%s", len(out), stderr.String())
	}
	return out
}

// TestStartupInit keeps the binary's start-up cheap: every subcommand pays
// the initialisation of every package linked, so no Wayside package may do
// real work at initialisation (compile regular expressions, parse
// templates, build tables: sync.OnceValue at the use site instead), and
// dependencies whose initialisation is heavy must not be linked. Allocation
// counts are deterministic; times are not and are not checked
// (scripts/bench-cdxj.sh shows what start-up costs a small run).
func TestStartupInit(t *testing.T) {
	trace := binaryInitTrace(t)
	// Linked only through the colly plug-in (crawl/crawlcolly): App
	// Engine's urlfetch registers protobuf descriptors at initialisation,
	// ~2.7 ms of CPU per run.
	banned := []string{"github.com/gocolly/", "google.golang.org/appengine", "github.com/golang/protobuf/"}
	const ownMaxBytes = 8 << 10      // any one Wayside package
	const totalMaxBytes = 1600 << 10 // all packages: 2.45 MB before the colly move and lazy regexps, 1.17 MB after
	var total int64
	for _, it := range trace {
		total += it.bytes
		for _, b := range banned {
			if strings.HasPrefix(it.pkg, b) {
				t.Errorf("package %s is linked into the binary and initialised on every run (%d bytes, %d allocs)", it.pkg, it.bytes, it.allocs)
			}
		}
		if (it.pkg == "main" || strings.HasPrefix(it.pkg, "github.com/wayside-archive/wayside/")) && it.bytes > ownMaxBytes {
			t.Errorf("package %s allocates %d bytes (%d allocs) at initialisation, more than %d: make the table lazy (sync.OnceValue at its use)", it.pkg, it.bytes, it.allocs, ownMaxBytes)
		}
	}
	if total > totalMaxBytes {
		t.Errorf("package initialisation allocates %d bytes in all, more than %d", total, totalMaxBytes)
	}
	t.Logf("%d packages initialised, %d bytes allocated", len(trace), total)
}
