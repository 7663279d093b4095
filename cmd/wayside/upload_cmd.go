package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/wayside-archive/wayside/warcfile/s3"
)

const uploadUsage = `--to s3://BUCKET/PREFIX?endpoint=… [--keep-local] DIR...

Copies the closed WARC files of each directory (a crawl's WARC directory)
to object storage, each with its CDXJ side file, and proves every copy by
reading it back whole (size and SHA-256) before the local file is removed
(--keep-local keeps it and writes NAME.uploaded, the proof, beside it).
Files still being written (.open) are left alone. Run it again after a
failure or a crash: what is not proved remote is still local and is sent
again. Credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or the
shared credentials file; never in the URL. Exit 1 when any file could not
be uploaded (each named; it stays local).`

func runUpload(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "upload", uploadUsage)
	to := fs.String("to", "", "the bucket and prefix to upload to, `s3://BUCKET/PREFIX?endpoint=http://HOST:PORT`")
	keep := fs.Bool("keep-local", false, "keep the local files once their copies are proved (NAME.uploaded records the proof)")
	quiet := fs.quietFlag()
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *to == "" || fs.NArg() == 0 {
		return fs.usagef("upload: give --to s3://BUCKET/PREFIX and at least one directory")
	}
	for _, d := range fs.Args() {
		if err := checkInputDir("upload", "directory", d); err != nil {
			return err
		}
	}
	b, err := s3.Open(ctx, *to)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	return mirrorDirs(ctx, e, b, fs.Args(), *keep, *quiet, "upload")
}

// mirrorDirs syncs each directory to b (s3.Mirror), printing what was
// proved remote; an error names every file that stayed local.
func mirrorDirs(ctx context.Context, e *env, b *s3.Bucket, dirs []string, keep, quiet bool, cmd string) error {
	var failed []string
	n := 0
	for _, d := range dirs {
		m := &s3.Mirror{Dir: d, Bucket: b, KeepLocal: keep, Logger: e.logger(false)}
		rep, err := m.Sync(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		for _, up := range rep.Uploaded {
			n++
			if !quiet {
				fmt.Fprintf(e.stdout, "%s: %s (%d bytes, sha256 %s) proved\n", cmd, up.URL, up.Size, up.SHA256[:16])
			}
		}
		failed = append(failed, rep.Failed...)
	}
	for _, f := range failed {
		fmt.Fprintf(e.stderr, "%s: not uploaded (kept locally): %s\n", cmd, f)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s: %d files not uploaded, %d uploaded (%s)", cmd, len(failed), n, strings.TrimSuffix(b.String(), "/"))
	}
	return nil
}
