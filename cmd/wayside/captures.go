package main

import (
	"context"
	"log/slog"
	"path/filepath"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/captureindex"
)

// CaptureIndexSubdir is where `wayside crawl` keeps the capture index of
// its WARC directory unless --capture-index says otherwise.
const CaptureIndexSubdir = "capture-index"

// crawlConsumers opens the consumers of a crawl's captures — the capture
// index (in dir, or WARC-DIR/capture-index; "-" for none), caught up from
// the CDXJ files beside the WARCs — behind a Fanout, so that none of them
// slows the crawl. It returns the subscriber to give the recorder and a
// function that drains and closes them.
func crawlConsumers(ctx context.Context, warcDir, dir, scope string, log *slog.Logger) (wayside.Subscriber, func() error, error) {
	if dir == "-" {
		return nil, func() error { return nil }, nil
	}
	if dir == "" {
		dir = filepath.Join(warcDir, CaptureIndexSubdir)
	}
	idx, err := captureindex.Open(ctx, dir, captureindex.WithScope(scope), captureindex.WithCDXJDirs(warcDir), captureindex.WithLogger(log))
	if err != nil {
		return nil, nil, err
	}
	fan := wayside.NewFanout(wayside.WithLogger(log))
	fan.Add("captureindex", idx)
	return fan, func() error {
		ferr := fan.Close()
		if err := idx.Close(); err != nil {
			return err
		}
		if ferr != nil {
			// The captures are in the CDXJ files: the next open catches up.
			log.Warn("crawl: capture index behind; it catches up from the CDXJ files when next opened", "err", ferr)
		}
		return nil
	}, nil
}
