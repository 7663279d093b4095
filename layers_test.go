package wayside_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/wayside-archive/wayside"

// listed is one package of `go list -deps -json`, the fields the rules read.
type listed struct {
	ImportPath string
	Name       string
	Standard   bool
	Module     *struct{ Path string }
	Imports    []string
	Deps       []string
}

// goList returns the packages of the module (not their dependencies) as
// `go list -json ./...` reports them: what the build links, tests aside.
func goList(t *testing.T) map[string]listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Name,Standard,Module,Imports,Deps", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]listed{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = p
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages of the module; expected the whole tree", len(pkgs))
	}
	return pkgs
}

func rel(p string) string {
	if p == module {
		return "."
	}
	return strings.TrimPrefix(p, module+"/")
}

func under(p string, roots ...string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// TestDependencyRules checks the layering README's Layout table describes,
// from the bottom up: libraries (everything that is not a program, the
// daemon or its client) never import the daemon (sidecar), its wire types
// (api) or its client; the dedup index core imports no backend, backends
// register themselves (dedupindex.RegisterScheme) and only programs and
// the daemon link the Redis and sidecar backends; a program that embeds
// crawl links neither go-redis nor the daemon's client.
func TestDependencyRules(t *testing.T) {
	pkgs := goList(t)
	program := func(p listed) bool {
		return p.Name == "main" || under(rel(p.ImportPath), "cmd", "examples", "scripts")
	}
	daemon := func(r string) bool { return under(r, "sidecar") }
	wire := func(r string) bool { return under(r, "api", "client") }
	for path, p := range pkgs {
		r := rel(path)
		if program(p) || daemon(r) {
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			ir := rel(imp)
			switch {
			case daemon(ir):
				t.Errorf("%s imports %s: a library never imports the daemon", r, ir)
			case under(ir, "cmd", "examples", "scripts"):
				t.Errorf("%s imports %s: a library never imports a program", r, ir)
			case wire(ir) && !wire(r):
				t.Errorf("%s imports %s: only the daemon, its client and programs use the daemon's API", r, ir)
			case ir == "dedupindex/redis" || (ir == "client" && r != "client"):
				t.Errorf("%s imports %s: backends other than the embedded one are linked by programs and the daemon only", r, ir)
			}
		}
	}
	forbid := map[string][]string{
		// What a crawler embedding Wayside links (the colly example).
		// Nor colly (and App Engine behind it): crawl/crawlcolly is the
		// plug-in, so the wayside binary does not initialise them.
		"crawl": {"github.com/redis/go-redis/v9", module + "/client", module + "/api", module + "/sidecar", module + "/dedupindex/redis",
			"github.com/gocolly/colly/v2", "google.golang.org/appengine"},
		// The core knows no backend: they register themselves.
		"dedupindex": {module + "/dedupindex/pebble", module + "/dedupindex/redis", module + "/client",
			"github.com/redis/go-redis/v9", "github.com/cockroachdb/pebble"},
		"ingest":    {module + "/api", module + "/client", module + "/sidecar"},
		"aggregate": {module + "/api", module + "/client", module + "/sidecar"},
	}
	// Test support (internal/testenv, which arms failpoints in crash
	// children, and the internal/*test packages built on it) is linked by
	// tests only: no program or library depends on it.
	testSupport := func(r string) bool {
		return r == "internal/testenv" || (under(r, "internal") && strings.HasSuffix(r, "test"))
	}
	for path, p := range pkgs {
		if r := rel(path); !testSupport(r) && slices.Contains(p.Deps, module+"/internal/testenv") {
			t.Errorf("%s depends on internal/testenv: test support is linked by tests only", r)
		}
	}
	for r, bad := range forbid {
		p, ok := pkgs[module+"/"+r]
		if !ok {
			t.Errorf("package %s not found", r)
			continue
		}
		for _, d := range p.Deps {
			for _, b := range bad {
				if d == b || strings.HasPrefix(d, b+"/") {
					t.Errorf("%s depends on %s", r, d)
				}
			}
		}
	}
}
