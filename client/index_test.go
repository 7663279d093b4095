package client_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/client"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/indextest"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/sidecar"
)

// TestIndexConformance runs the dedupindex conformance suite against
// Client.Index, backed by an in-process sidecar on a Unix socket over a
// real pebble index. Opening the store starts the daemon; closing it
// closes the adapter, stops the daemon and closes pebble, so the suite's
// reopen and stale-ticket tests exercise a daemon restart. The API
// requires a commit to name the record's file (CommitNeedsLocation).
func TestIndexConformance(t *testing.T) {
	indextest.RunWith(t, indextest.Options{CommitNeedsLocation: true}, func(t *testing.T) indextest.Opener {
		dir := t.TempDir()
		return func() (dedupindex.Index, error) { return startRemote(dir) }
	})
}

// remote is client.Index plus the daemon behind it.
type remote struct {
	dedupindex.Index
	pix  *pebble.Index
	stop func() error
}

// PutBatch keeps the adapter's dedupindex.Batcher visible through remote.
func (r *remote) PutBatch(ctx context.Context, es []dedupindex.Entry) ([]bool, error) {
	return r.Index.(dedupindex.Batcher).PutBatch(ctx, es)
}

// Scan, Delete and Update keep the adapter's dedupindex.Maintainer
// visible through remote: the suite runs them over the wire.
func (r *remote) Scan(ctx context.Context, sel dedupindex.Selector, fn func(dedupindex.Entry) error) error {
	return r.Index.(dedupindex.Maintainer).Scan(ctx, sel, fn)
}

func (r *remote) Delete(ctx context.Context, sel dedupindex.Selector) (int64, error) {
	return r.Index.(dedupindex.Maintainer).Delete(ctx, sel)
}

func (r *remote) Update(ctx context.Context, moves []dedupindex.Move) (int64, error) {
	return r.Index.(dedupindex.Maintainer).Update(ctx, moves)
}

// Check checks the daemon's pebble index while it serves.
func (r *remote) Check(ctx context.Context) error { return r.pix.Check(ctx) }

func (r *remote) Close() error {
	err := r.Index.Close()
	if serr := r.stop(); err == nil {
		err = serr
	}
	return err
}

func startRemote(dir string) (_ dedupindex.Index, err error) {
	cfg := sidecar.Config{DataDir: filepath.Join(dir, "data")}
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, err
	}
	pix, err := pebble.Open(filepath.Join(dir, "index"))
	if err != nil {
		return nil, err
	}
	srv, err := sidecar.New(cfg, sidecar.Options{Index: pix})
	if err != nil {
		pix.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		err := <-done
		if cerr := pix.Close(); err == nil {
			err = cerr
		}
		return err
	}
	c, err := client.New(cfg.Listen.Unix)
	if err != nil {
		return nil, errors.Join(err, stop())
	}
	deadline := time.Now().Add(2 * time.Minute)
	for c.Healthz(context.Background()) != nil {
		select {
		case err := <-done:
			done <- err
			return nil, errors.Join(errors.New("sidecar stopped before serving"), err, stop())
		default:
		}
		if time.Now().After(deadline) {
			return nil, errors.Join(errors.New("sidecar not up after 2 minutes"), stop())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return &remote{Index: c.Index(), pix: pix, stop: stop}, nil
}
