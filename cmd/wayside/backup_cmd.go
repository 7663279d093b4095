package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
)

const backupUsage = `[flags] DIR

Take a consistent snapshot of every store of a running daemon into DIR
(created; it must not exist): the dedup index and the capture index
(pebble checkpoints), the ingest checkpoint and CDXJ files, the live
MementoMap, the characterization store, the fixity directory. Ingest pauses
at a batch boundary for the copy and resumes after it; lookups and CDX
queries are answered throughout. DIR is laid out as the daemon's data_dir:
to restore, stop the daemon, put DIR's contents in place of data_dir (or
point data_dir at it) and start it. A Redis index is not in the snapshot
(back it up with Redis's own tools); the summary says what was left out.`

// runBackup asks a running daemon for a snapshot.
func runBackup(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "backup", backupUsage)
	addr := fs.String("addr", "", "daemon address: Unix socket path or http://127.0.0.1:PORT (default $WAYSIDE_ADDR or wayside-data/wayside.sock)")
	tokenFile := fs.String("token-file", "", "file holding the TCP token (default $WAYSIDE_TOKEN)")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("backup: give one directory to write the snapshot to")
	}
	dir, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	c, err := dialDaemon(e, *addr, *tokenFile)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer c.Close()
	res, err := c.Backup(ctx, dir)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if *asJSON {
		b, _ := json.MarshalIndent(res, "", "  ")
		fmt.Fprintln(e.stdout, string(b))
		return nil
	}
	fmt.Fprintf(e.stdout, "snapshot %s taken %s: %d records of %d WARC files ingested\n", res.Dir, res.Time, res.Records, res.Files)
	for _, s := range res.Stores {
		fmt.Fprintf(e.stdout, "  %-24s %s\n", s.Name, s.In)
	}
	for _, l := range res.Left {
		fmt.Fprintf(e.stdout, "  not in it: %s\n", l)
	}
	return nil
}
