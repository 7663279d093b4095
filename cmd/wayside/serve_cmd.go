package main

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/sidecar"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// runServe runs the sidecar daemon until SIGINT/SIGTERM (ctx cancel).
func runServe(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "serve", "[flags]\n\n"+
		"Runs the sidecar daemon until SIGTERM or Ctrl-C (then exit status 0 after a\n"+
		"clean shutdown). Every WARC directory to watch must exist: a mistyped path\n"+
		"is refused at start-up rather than watched in silence.\n\n"+
		"Config file keys (YAML, ${ENV} expanded; flags override) and their defaults:\n"+
		configKeys()+"\nFlags:")
	configPath := fs.String("config", "", "YAML config file (see examples/heritrix/wayside.yaml)")
	dataDir := fs.String("data-dir", "", "data directory (overrides data_dir)")
	unix := fs.String("unix", "", `Unix socket path (overrides listen.unix; "-" disables)`)
	tcp := fs.String("tcp", "", "loopback TCP address, e.g. 127.0.0.1:8181 (overrides listen.tcp)")
	tokenFile := fs.String("token-file", "", "file holding the TCP bearer token (overrides listen.token_file)")
	indexURL := fs.String("index", "", "dedup index: a directory (embedded pebble) or a URL such as pebble:///DIR or redis://HOST:PORT,HOST:PORT/ (overrides index.url and index.path)")
	scope := fs.String("scope", "", "default dedup scope (overrides index.scope)")
	var watch stringList
	fs.Var(&watch, "watch", "WARC directory, or s3://BUCKET/PREFIX?endpoint=… prefix, to ingest (repeatable; adds to ingest.dirs)")
	poll := fs.Duration("poll", 0, "WARC directory poll interval (overrides ingest.poll_interval)")
	logLevel := fs.String("log-level", "", "debug, info, warn or error (overrides log.level)")
	logFormat := fs.String("log-format", "", "text or json (overrides log.format)")
	characterize := fs.Bool("characterize", false, "identify the format of every ingested capture (sets characterize.enabled)")
	fs.atLeast("poll", 0)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fs.usagef("serve: unexpected argument %q", fs.Arg(0))
	}
	// load reads the config file and applies the flags: at start-up, and
	// again on SIGHUP or POST /v1/admin/reload.
	load := func() (sidecar.Config, error) {
		var cfg sidecar.Config
		if *configPath != "" {
			// An empty config file would give a daemon on all defaults.
			if err := checkInputs("serve", []string{*configPath}); err != nil {
				return cfg, err
			}
			var err error
			if cfg, err = sidecar.LoadConfig(*configPath, e.getenv); err != nil {
				return cfg, err
			}
		}
		set := func(dst *string, v string) {
			if v != "" {
				*dst = v
			}
		}
		set(&cfg.DataDir, *dataDir)
		set(&cfg.Listen.Unix, *unix)
		set(&cfg.Listen.TCP, *tcp)
		set(&cfg.Listen.TokenFile, *tokenFile)
		set(&cfg.Index.URL, *indexURL)
		set(&cfg.Index.Scope, *scope)
		set(&cfg.Log.Level, *logLevel)
		set(&cfg.Log.Format, *logFormat)
		cfg.Ingest.Dirs = append(cfg.Ingest.Dirs, watch...)
		cfg.Characterize.Enabled = cfg.Characterize.Enabled || *characterize
		if *poll != 0 {
			cfg.Ingest.PollInterval = *poll
		}
		cfg.Defaults()
		return cfg, cfg.ResolveToken()
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	// Before the data directory and the index are created.
	if err := cfg.CheckDirs(); err != nil {
		return err
	}
	log := newServeLogger(e, cfg.Log)
	// Before the index is opened: the data directory is created 0700 (or
	// refused if others may write it) before anything is put in it.
	if err := cfg.PrepareDirs(log); err != nil {
		return err
	}
	if e.getenv("GOGC") == "" {
		// The Go heap holds small, short-lived request objects (Pebble's
		// cache is outside it): collect less often, spend the CPU on lookups.
		debug.SetGCPercent(400)
	}
	idx, err := cfg.OpenIndex(ctx, "", log.With("component", "index"))
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	srv, err := sidecar.New(cfg, sidecar.Options{Index: idx, Logger: log, Version: buildVersion(), LoadConfig: load})
	if err != nil {
		idx.Close()
		return fmt.Errorf("serve: %w", err)
	}
	stopHUP := onSIGHUP(ctx, func() {
		log.Info("serve: SIGHUP: reloading the config")
		_ = srv.Reload(ctx) // a refused reload is logged and shown in status
	})
	defer stopHUP()
	stopReady := notifyReady(ctx, e, srv, log)
	defer stopReady()
	runErr := srv.Run(ctx)
	if err := idx.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("serve: close index: %w", err)
	}
	if runErr == nil && ctx.Err() != nil {
		// SIGTERM or Ctrl-C is how a daemon is told to stop: a clean
		// shutdown is a success (exit 0), not an interruption.
		return errCleanStop
	}
	return runErr
}

// configKeys lists the keys of the daemon's YAML config with their
// defaults, generated from sidecar.Config's yaml tags (after Defaults), so
// the list cannot drift from what LoadConfig accepts.
func configKeys() string {
	var c sidecar.Config
	oneItem(reflect.ValueOf(&c).Elem()) // list items get their defaults too
	c.Defaults()
	var b strings.Builder
	writeKeys(&b, reflect.ValueOf(c), "  ")
	return b.String()
}

func writeKeys(b *strings.Builder, v reflect.Value, indent string) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		switch {
		case fv.Kind() == reflect.Struct && fv.Type() != reflect.TypeOf(time.Duration(0)):
			fmt.Fprintf(b, "%s%s:\n", indent, name)
			writeKeys(b, fv, indent+"  ")
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Struct:
			fmt.Fprintf(b, "%s%s: []  # a list of:\n", indent, name)
			item := reflect.New(fv.Type().Elem()).Elem()
			if fv.Len() > 0 {
				item = fv.Index(0)
			}
			writeKeys(b, item, indent+"  - ")
		default:
			fmt.Fprintf(b, "%s%s: %s\n", indent, name, yamlValue(fv))
		}
		if strings.HasSuffix(indent, "- ") {
			indent = strings.Repeat(" ", len(indent)) // later fields of the list item
		}
	}
}

// oneItem gives every list of structs in v one zero item, recursively.
func oneItem(v reflect.Value) {
	for i := range v.NumField() {
		fv := v.Field(i)
		switch {
		case !v.Type().Field(i).IsExported():
		case fv.Kind() == reflect.Struct:
			oneItem(fv)
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Struct:
			fv.Set(reflect.MakeSlice(fv.Type(), 1, 1))
			oneItem(fv.Index(0))
		}
	}
}

// yamlValue spells a default as YAML would.
func yamlValue(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case time.Duration:
		return x.String()
	case string:
		if x == "" {
			return `""`
		}
		return x
	}
	if v.Kind() == reflect.Slice {
		if v.Len() == 0 {
			return "[]"
		}
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v.Interface())
}

func newServeLogger(e *env, lc sidecar.LogConfig) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(lc.Level))
	opts := &slog.HandlerOptions{Level: lvl}
	if lc.Format == "json" {
		return slog.New(slog.NewJSONHandler(e.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(e.stderr, opts))
}

// buildVersion is the module version the binary was built from.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
