package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/dedupindex"
)

var _ dedupindex.Maintainer = (*indexAdapter)(nil)

// ScanIndex calls fn for every original of the daemon's dedup index that
// sel matches, as the daemon streams them. A stream cut before its end
// line is an error.
func (c *Client) ScanIndex(ctx context.Context, sel dedupindex.Selector, fn func(dedupindex.Entry) error) error {
	b, err := json.Marshal(sel)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	resp, err := c.do(ctx, http.MethodPost, api.PathIndexScan, bytes.NewReader(b), "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var n int64
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte(`{"end":`)) {
			var end api.ScanEnd
			if err := json.Unmarshal(line, &end); err != nil {
				return fmt.Errorf("client: index scan: %w", err)
			}
			if end.Count != n {
				return fmt.Errorf("client: index scan: %d entries received, the daemon sent %d", n, end.Count)
			}
			return nil
		}
		var e dedupindex.Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return fmt.Errorf("client: index scan: entry %d: %w", n+1, err)
		}
		n++
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("client: index scan: %w", err)
	}
	return fmt.Errorf("client: index scan: the answer ended after %d entries without its end line (the daemon failed; see its log)", n)
}

// DeleteIndex deletes the originals of the daemon's dedup index that sel
// matches.
func (c *Client) DeleteIndex(ctx context.Context, sel dedupindex.Selector) (int64, error) {
	var res api.DeleteResult
	if err := c.call(ctx, http.MethodPost, api.PathIndexDelete, sel, &res); err != nil {
		return 0, err
	}
	return res.Deleted, nil
}

// UpdateIndex moves originals of the daemon's dedup index.
func (c *Client) UpdateIndex(ctx context.Context, moves []dedupindex.Move) (int64, error) {
	var res api.UpdateResult
	if err := c.call(ctx, http.MethodPost, api.PathIndexUpdate, api.UpdateRequest{Moves: moves}, &res); err != nil {
		return 0, err
	}
	return res.Updated, nil
}

// DeleteCaptures deletes the captures of the daemon's capture index that
// sel matches.
func (c *Client) DeleteCaptures(ctx context.Context, sel dedupindex.Selector) (int64, error) {
	var res api.DeleteResult
	if err := c.call(ctx, http.MethodPost, api.PathCapturesDelete, sel, &res); err != nil {
		return 0, err
	}
	return res.Deleted, nil
}

// ReplaceFiles replaces the captures of rewritten WARC files in the
// daemon's capture index (see captureindex.Index.ReplaceFiles).
func (c *Client) ReplaceFiles(ctx context.Context, files map[string][]wayside.Capture) (api.ReplaceFilesResult, error) {
	var res api.ReplaceFilesResult
	err := c.call(ctx, http.MethodPost, api.PathCapturesReplace, api.ReplaceFilesRequest{Files: files}, &res)
	return res, err
}

func (a *indexAdapter) Scan(ctx context.Context, sel dedupindex.Selector, fn func(dedupindex.Entry) error) error {
	if err := a.enter(); err != nil {
		return err
	}
	defer a.mu.RUnlock()
	return a.c.ScanIndex(ctx, sel, fn)
}

func (a *indexAdapter) Delete(ctx context.Context, sel dedupindex.Selector) (int64, error) {
	if err := a.enter(); err != nil {
		return 0, err
	}
	defer a.mu.RUnlock()
	if sel.IsZero() {
		return 0, dedupindex.ErrEmptySelector
	}
	return a.c.DeleteIndex(ctx, sel)
}

func (a *indexAdapter) Update(ctx context.Context, moves []dedupindex.Move) (int64, error) {
	if err := a.enter(); err != nil {
		return 0, err
	}
	defer a.mu.RUnlock()
	for _, m := range moves {
		if err := checkKey("update", m.Key); err != nil {
			return 0, err
		}
	}
	return a.c.UpdateIndex(ctx, moves)
}
