package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestServeHelpListsConfigKeys: `serve -h` lists the YAML keys with their
// defaults (generated from sidecar.Config), so every key of the shipped
// Heritrix example config appears in it, nested as in the file.
func TestServeHelpListsConfigKeys(t *testing.T) {
	out, _, err := runCLI(context.Background(), "serve", "-h")
	if err != nil && !strings.Contains(err.Error(), "help requested") {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "heritrix", "wayside.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(m map[string]any, indent string)
	walk = func(m map[string]any, indent string) {
		for k, v := range m {
			if !strings.Contains(out, "\n"+indent+k+":") {
				t.Errorf("serve -h does not list the key %q (at indent %q) of the example config", k, indent)
			}
			if sub, ok := v.(map[string]any); ok {
				walk(sub, indent+"  ")
			}
		}
	}
	walk(doc, "  ")
	for _, want := range []string{"\n    poll_interval: 2s\n", "\n  data_dir: wayside-data\n", "\n    claim_ttl: 10m0s\n", "\n        parallelism: 2\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("serve -h lacks the default %q:\n%s", strings.TrimSpace(want), out)
		}
	}
}

// TestCrawlJSONSummary: --json prints the summary as JSON, the failed
// fetches by class included, and the crawl still exits with an error.
func TestCrawlJSONSummary(t *testing.T) {
	refused := closedPortURL(t) + "/"
	out, _, err := runCLI(context.Background(), "crawl", "--warc-dir", t.TempDir(), "--json", "-q", refused)
	if err == nil || !strings.Contains(err.Error(), "nothing was fetched") {
		t.Errorf("crawl of a closed port: err %v, want a failure", err)
	}
	var sum crawlJSON
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	// robots.txt (obeyed by default) is refused; the seed is then not
	// fetched (RFC 9309: an unreachable robots.txt disallows everything).
	if sum.Pages != 0 || sum.Errors != 1 || sum.RobotsSkipped != 1 || len(sum.Failures) != 1 || sum.Failures[0].Class != "connection refused" ||
		!strings.Contains(sum.Failures[0].Example, refused) {
		t.Errorf("--json summary: %+v", sum)
	}
}
