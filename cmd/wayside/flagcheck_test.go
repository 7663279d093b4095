package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
)

// subcommands lists every subcommand path that has its own flags. The test
// below fails when a top-level command is missing here, so a new
// subcommand is audited as soon as it lands.
var subcommands = [][]string{
	{"cdxj"}, {"crawl"}, {"demo"}, {"serve"}, {"status"}, {"version"}, {"validate"}, {"upload"}, {"backup"},
	{"access", "add"}, {"access", "remove"}, {"access", "list"}, {"access", "check"},
	{"aggregate", "eval"}, {"aggregate", "timemap"}, {"aggregate", "timegate"},
	{"characterize"}, {"characterize", "query"},
	{"convert", "arc2warc"}, {"convert", "verify"},
	{"dedup", "assess"}, {"dedup", "manifest"}, {"dedup", "resolve"}, {"dedup", "rewrite"}, {"dedup", "validate"}, {"dedup", "run"},
	{"fixity", "replay"}, {"fixity", "compare"}, {"fixity", "verify"}, {"fixity", "sweep"}, {"fixity", "report"}, {"fixity", "accept"},
	{"index", "import"}, {"index", "stats"}, {"index", "lookup"}, {"index", "delete"}, {"index", "export"}, {"index", "scopes"}, {"index", "verify"},
	{"mementomap", "generate"}, {"mementomap", "compact"}, {"mementomap", "lookup"}, {"mementomap", "merge"},
	{"mementomap", "eval"}, {"mementomap", "stats"}, {"mementomap", "synth"},
	{"wacz", "create"}, {"wacz", "verify"}, {"wacz", "pubkey"},
	{"migrate"}, {"migrate", "risk"}, {"migrate", "pathways"},
}

// TestEveryNumericFlagIsChecked runs every subcommand's -h with the flag
// audit on: each numeric flag must declare the values it accepts (so
// --parallel 0 or --mem -1 is a usage error, not a silent misbehaviour),
// and each default must satisfy its own rule.
func TestEveryNumericFlagIsChecked(t *testing.T) {
	top := map[string]bool{}
	for _, p := range subcommands {
		top[p[0]] = true
	}
	for _, c := range commands() {
		if !top[c.name] {
			t.Errorf("subcommand %q is not in the flag audit's list", c.name)
		}
	}
	for _, p := range subcommands {
		audited := false
		var out bytes.Buffer
		e := &env{stdout: &out, stderr: &out, stdin: strings.NewReader(""), getenv: func(string) string { return "" },
			flagAudit: func(cmd string, unranged, badDefaults []string) {
				audited = true
				for _, n := range unranged {
					t.Errorf("%s: numeric flag --%s declares no range (fs.atLeast / fs.within)", cmd, n)
				}
				for _, d := range badDefaults {
					t.Errorf("%s: default breaks its rule: %s", cmd, d)
				}
			}}
		if err := run(context.Background(), append(append([]string(nil), p...), "-h"), e); err != nil && !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%v -h: %v", p, err)
		}
		if !audited {
			t.Errorf("%v -h did not parse its flags through flagSet.Parse", p)
		}
	}
}
