// Command testreport turns the event stream of `go test -json` (on stdin)
// into what a person running the suite needs: a line per package as it
// finishes, a heartbeat naming the packages still running, the output of
// every failing test, the list of skipped tests with their reasons, and
// final counts of tests run, passed, failed and skipped (per package on
// failure). It exits 1 when any test or package failed, or when the stream
// holds no test at all.
//
//	go test -json ./... | go run ./internal/testreport
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string
	Test       string
	Elapsed    float64
	Output     string
}

type pkgState struct {
	name                         string
	run, passed, failed, skipped int
	done                         bool
	result                       string // ok, FAIL, skip (no test files)
	elapsed                      float64
	output                       map[string]*strings.Builder // per test
	pkgOut                       strings.Builder
	failedTests                  []string
	skips                        []string // "Test: reason"
}

type report struct {
	mu       sync.Mutex
	pkgs     map[string]*pkgState
	order    []string
	buildErr []string
	out      io.Writer
	start    time.Time
}

func main() {
	r := &report{pkgs: map[string]*pkgState{}, out: os.Stdout, start: time.Now()}
	stop := make(chan struct{})
	go r.heartbeat(stop, 30*time.Second)
	err := r.read(os.Stdin)
	close(stop)
	code := r.summary()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		code = 1
	}
	os.Exit(code)
}

func (r *report) pkg(name string) *pkgState {
	p := r.pkgs[name]
	if p == nil {
		p = &pkgState{name: name, output: map[string]*strings.Builder{}}
		r.pkgs[name] = p
		r.order = append(r.order, name)
	}
	return p
}

// read consumes the stream; lines that are not JSON (a go command message)
// are printed as they are.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			fmt.Fprintln(r.out, string(line))
			continue
		}
		r.handle(ev)
	}
	return sc.Err()
}

func (r *report) handle(ev event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev.Action {
	case "build-output":
		r.buildErr = append(r.buildErr, strings.TrimRight(ev.Output, "\n"))
		return
	case "build-fail":
		return
	}
	if ev.Package == "" {
		return
	}
	p := r.pkg(ev.Package)
	top := ev.Test != "" && !strings.Contains(ev.Test, "/")
	switch ev.Action {
	case "output":
		if ev.Test == "" {
			p.pkgOut.WriteString(ev.Output)
			return
		}
		b := p.output[ev.Test]
		if b == nil {
			b = &strings.Builder{}
			p.output[ev.Test] = b
		}
		if b.Len() < 1<<20 {
			b.WriteString(ev.Output)
		}
	case "run":
		if top {
			p.run++
		}
	case "pass":
		if ev.Test == "" {
			r.finish(p, "ok", ev.Elapsed)
		} else if top {
			p.passed++
		}
	case "skip":
		if ev.Test == "" {
			r.finish(p, "skip", ev.Elapsed)
		} else if top {
			p.skipped++
			p.skips = append(p.skips, ev.Test+": "+skipReason(p.output[ev.Test]))
		}
	case "fail":
		if ev.Test == "" {
			r.finish(p, "FAIL", ev.Elapsed)
		} else {
			if top {
				p.failed++
			}
			p.failedTests = append(p.failedTests, ev.Test)
		}
	}
}

// skipReason is the message a test gave t.Skip.
func skipReason(b *strings.Builder) string {
	if b == nil {
		return "(no reason given)"
	}
	var last string
	for _, l := range strings.Split(b.String(), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		last = l
	}
	if last == "" {
		return "(no reason given)"
	}
	return last
}

func (r *report) finish(p *pkgState, result string, elapsed float64) {
	p.done, p.result, p.elapsed = true, result, elapsed
	switch {
	case result == "skip" || (result == "ok" && p.run == 0):
		fmt.Fprintf(r.out, "%-4s %s (no tests)\n", "ok", p.name)
	default:
		extra := ""
		if p.skipped > 0 {
			extra = fmt.Sprintf(", %d skipped", p.skipped)
		}
		if p.failed > 0 {
			extra += fmt.Sprintf(", %d FAILED", p.failed)
		}
		fmt.Fprintf(r.out, "%-4s %s %.1fs (%d tests%s)\n", result, p.name, elapsed, p.run, extra)
	}
	if result == "FAIL" {
		for _, t := range p.failedTests {
			if b := p.output[t]; b != nil {
				fmt.Fprintf(r.out, "    --- output of %s:\n%s", t, indent(b.String()))
			}
		}
		if p.pkgOut.Len() > 0 {
			fmt.Fprintf(r.out, "    --- package output:\n%s", indent(p.pkgOut.String()))
		}
	}
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("      " + l)
		}
	}
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	return b.String()
}

// heartbeat says which packages are still running when nothing finished
// for a while, so a long suite never looks hung.
func (r *report) heartbeat(stop <-chan struct{}, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			r.mu.Lock()
			var running []string
			for _, n := range r.order {
				if p := r.pkgs[n]; !p.done && p.run > 0 {
					running = append(running, strings.TrimPrefix(n, "github.com/wayside-archive/wayside/"))
				}
			}
			if len(running) > 0 {
				fmt.Fprintf(r.out, "...  %s elapsed, running: %s\n", time.Since(r.start).Round(time.Second), strings.Join(running, ", "))
			}
			r.mu.Unlock()
		}
	}
}

// summary prints the totals and returns the exit status.
func (r *report) summary() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var run, passed, failed, skipped int
	var failedPkgs, skipLines []string
	names := append([]string(nil), r.order...)
	sort.Strings(names)
	for _, n := range names {
		p := r.pkgs[n]
		run, passed, failed, skipped = run+p.run, passed+p.passed, failed+p.failed, skipped+p.skipped
		if p.result == "FAIL" || !p.done {
			failedPkgs = append(failedPkgs, fmt.Sprintf("  %s: %d failed of %d (%s)", n, p.failed, p.run, strings.Join(p.failedTests, ", ")))
			if !p.done {
				failedPkgs[len(failedPkgs)-1] += " — did not finish"
			}
		}
		for _, s := range p.skips {
			skipLines = append(skipLines, "  "+strings.TrimPrefix(n, "github.com/wayside-archive/wayside/")+" "+s)
		}
	}
	if len(r.buildErr) > 0 {
		fmt.Fprintln(r.out, "build errors:")
		for _, l := range r.buildErr {
			fmt.Fprintln(r.out, "  "+l)
		}
	}
	if len(skipLines) > 0 {
		fmt.Fprintln(r.out, "skipped tests:")
		for _, l := range skipLines {
			fmt.Fprintln(r.out, l)
		}
	}
	fmt.Fprintf(r.out, "tests: %d run, %d passed, %d failed, %d skipped in %d packages (%s)\n",
		run, passed, failed, skipped, len(names), time.Since(r.start).Round(time.Second))
	if len(failedPkgs) > 0 {
		fmt.Fprintln(r.out, "FAILED packages:")
		for _, l := range failedPkgs {
			fmt.Fprintln(r.out, l)
		}
		return 1
	}
	if len(r.buildErr) > 0 {
		return 1
	}
	if run == 0 {
		fmt.Fprintln(r.out, "no tests ran")
		return 1
	}
	return 0
}
