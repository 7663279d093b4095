package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/wayside-archive/wayside/replay"
	"github.com/wayside-archive/wayside/sidecar"
)

const accessUsage = `<command> [flags]

Access rules decide, per capture and access point, what the archive shows:
pywb's .aclj files as they are (and OutbackCDX's rule JSON, read only).
'wayside serve' reads them from access.rules and picks up changes while it runs.

  add    --rules PATH [--match exact|prefix|host|domain] [--user POINT]
         [--embargo PERIOD] [--message TEXT] URL allow|block|exclude|embargo
      add a rule (replacing one for the same URL, match and access point);
      block answers 451 with the message, exclude hides (404), embargo hides
      captures newer than PERIOD (1y, 6m, 30d).
  remove --rules PATH [--match ...] [--user POINT] URL
      remove the rule for URL (exit 1 when there is none).
  list   --rules PATH | --addr ADDR [--json]
      print the rules as .aclj lines (from a daemon: the rules in force).
  check  --rules PATH | --addr ADDR [--at TIMESTAMP] [--point POINT] [--json] URL
      print the decision for a capture of URL at a time (default now).

PATH is an .aclj file or a directory of them (edits go to its wayside.aclj).`

func runAccess(ctx context.Context, e *env, args []string) error {
	return runGroup(ctx, e, "access", accessUsage, args, []subcommand{
		{"add", func(ctx context.Context, e *env, a []string) error { return runAccessEdit(e, "add", a) }},
		{"remove", func(ctx context.Context, e *env, a []string) error { return runAccessEdit(e, "remove", a) }},
		{"list", runAccessList},
		{"check", runAccessCheck},
	})
}

// parseInterleaved parses flags that may come before and after the
// positional arguments, returning those.
func parseInterleaved(fs *flagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func runAccessEdit(e *env, cmd string, args []string) error {
	fs := newFlagSet(e, "access "+cmd, "--rules PATH [flags] URL"+map[string]string{"add": " ACCESS", "remove": ""}[cmd])
	rules := fs.String("rules", "", "the rules file (.aclj) or directory (required)")
	match := fs.String("match", "prefix", "how URL matches: exact, prefix, host or domain")
	user := fs.String("user", "", "the access point the rule applies at (default: every one)")
	embargo := fs.String("embargo", "", "add: hide captures newer than this period (1y, 6m, 30d)")
	message := fs.String("message", "", "add: the message a 451 carries")
	fs.oneOf("match", "exact", "prefix", "host", "domain")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	want := map[string]int{"add": 2, "remove": 1}[cmd]
	if len(pos) != want {
		return fs.usagef("access %s: want %s, got %d arguments", cmd, map[string]string{"add": "URL and ACCESS", "remove": "URL"}[cmd], len(pos))
	}
	if *rules == "" {
		return fs.usagef("access %s: --rules is required", cmd)
	}
	spec := replay.RuleSpec{URL: pos[0], Match: *match, User: *user, Embargo: *embargo, Message: *message, Access: "allow"}
	if cmd == "add" {
		spec.Access = pos[1]
	}
	rs, err := spec.Rules()
	if err != nil {
		return fs.usagef("access %s: %v", cmd, err)
	}
	out, err := sidecar.EditAccessRules(*rules, rs, cmd == "remove")
	if err != nil {
		return fmt.Errorf("access %s: %w", cmd, err)
	}
	if cmd == "remove" {
		if out.Removed == 0 {
			return fmt.Errorf("access remove: no rule for %s (match %s, access point %q) in %s", spec.URL, spec.Match, spec.User, out.File)
		}
		fmt.Fprintf(e.stdout, "removed %d rule(s) from %s\n", out.Removed, out.File)
		return nil
	}
	for _, l := range out.Added {
		fmt.Fprintf(e.stdout, "%s\t%s\n", out.File, l)
	}
	return nil
}

func runAccessList(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "access list", "--rules PATH | --addr ADDR [--json]")
	rules := fs.String("rules", "", "the rules file or directory")
	addr := fs.String("addr", "", "a running daemon (Unix socket or http://127.0.0.1:PORT): the rules in force")
	tokenFile := fs.String("token-file", "", "file holding the TCP token (default $WAYSIDE_TOKEN)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || (*rules == "") == (*addr == "") {
		return fs.usagef("access list: give --rules or --addr (and nothing else)")
	}
	var st sidecar.AccessState
	if *addr != "" {
		c, err := dialDaemon(e, *addr, *tokenFile)
		if err != nil {
			return fmt.Errorf("access list: %w", err)
		}
		defer c.Close()
		if err := c.GetJSON(ctx, "/v1/access", &st); err != nil {
			return fmt.Errorf("access list: %w", err)
		}
	} else {
		rs, err := replay.LoadRules(*rules, "")
		if err != nil {
			return fmt.Errorf("access list: %w", err)
		}
		st = sidecar.AccessState{Rules: *rules, Default: "allow", Lines: []string{}, Fronts: []sidecar.PublicFront{}}
		for _, r := range rs.List() {
			st.Lines = append(st.Lines, r.ACLJ())
		}
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	for _, l := range st.Lines {
		fmt.Fprintln(e.stdout, l)
	}
	if st.Error != "" {
		return fmt.Errorf("access list: the daemon keeps these rules; its last reload failed: %s", st.Error)
	}
	return nil
}

func runAccessCheck(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "access check", "--rules PATH | --addr ADDR [flags] URL")
	rules := fs.String("rules", "", "the rules file or directory")
	addr := fs.String("addr", "", "a running daemon: decide with the rules in force")
	tokenFile := fs.String("token-file", "", "file holding the TCP token (default $WAYSIDE_TOKEN)")
	at := fs.String("at", "", "the capture's timestamp, 1 to 14 digits (default now)")
	point := fs.String("point", "", "the access point (default: public with --rules, the daemon's own with --addr)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || (*rules == "") == (*addr == "") {
		return fs.usagef("access check: give one URL and --rules or --addr")
	}
	when := time.Now()
	if *at != "" {
		if when, err = replay.ParseTimestamp(*at, false); err != nil {
			return fs.usagef("access check: --at: %v", err)
		}
	}
	var out sidecar.AccessCheck
	if *addr != "" {
		c, err := dialDaemon(e, *addr, *tokenFile)
		if err != nil {
			return fmt.Errorf("access check: %w", err)
		}
		defer c.Close()
		q := "url=" + url.QueryEscape(pos[0]) + "&at=" + replay.Timestamp(when)
		if *point != "" {
			q += "&point=" + url.QueryEscape(*point)
		}
		if err := c.GetJSON(ctx, "/v1/access/check?"+q, &out); err != nil {
			return fmt.Errorf("access check: %w", err)
		}
	} else {
		rs, err := replay.LoadRules(*rules, "")
		if err != nil {
			return fmt.Errorf("access check: %w", err)
		}
		p := *point
		if p == "" {
			p = "public"
		}
		out = sidecar.CheckAccess(rs, pos[0], when, p)
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	line := out.Access
	if out.Rule != "" {
		line += "\t" + out.Rule
		if out.Source != "" {
			line += "\t(" + out.Source + ")"
		}
	} else {
		line += "\t(no rule: the default)"
	}
	fmt.Fprintln(e.stdout, line)
	return nil
}
