package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// crawlLog tails a Heritrix crawl.log (ingest.crawl_log) for capture
// status: fetch status codes, bytes, and the duplicates Heritrix itself
// reports (annotation "duplicate:digest" / "duplicate:server-not-modified").
// It is a statistics feed only: the WARC files are the source of truth for
// what is indexed. Heritrix rotates crawl.log at checkpoints; a file that
// shrinks or changes identity is read again from its start.
type crawlLog struct {
	path string

	mu         sync.Mutex
	offset     int64 // bytes read, a partial last line included
	lines      int64
	bad        int64
	byStatus   map[string]int64
	duplicates int64
	bytes      int64
}

func newCrawlLog(path string) *crawlLog {
	return &crawlLog{path: path, byStatus: map[string]int64{}}
}

func (c *crawlLog) status() *CrawlLogStatus {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &CrawlLogStatus{Path: c.path, Offset: c.offset, Lines: c.lines, Unparsed: c.bad, Duplicates: c.duplicates, Bytes: c.bytes, ByStatus: map[string]int64{}}
	for k, v := range c.byStatus {
		st.ByStatus[k] = v
	}
	return st
}

// parse reads one crawl.log line: fields are separated by runs of spaces;
// 2 = fetch status, 3 = size, 12 = annotations.
func (c *crawlLog) parse(line []byte) {
	f := strings.Fields(string(line))
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(f) < 11 {
		c.bad++
		return
	}
	c.lines++
	c.byStatus[f[1]]++
	if n, err := strconv.ParseInt(f[2], 10, 64); err == nil {
		c.bytes += n
	}
	if len(f) > 11 && strings.Contains(f[11], "duplicate:") {
		c.duplicates++
	}
}

// run tails the file every poll until ctx ends.
func (c *crawlLog) run(ctx context.Context, poll time.Duration) {
	var f *os.File
	var ino uint64
	var pos int64
	var partial []byte
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		fi, err := os.Stat(c.path)
		if err == nil {
			cur := fileIno(fi)
			if f == nil || cur != ino || fi.Size() < pos {
				if f != nil {
					f.Close()
				}
				f, err = os.Open(c.path)
				if err != nil {
					f = nil
				}
				ino, pos, partial = cur, 0, nil
				c.mu.Lock()
				c.offset = 0
				c.mu.Unlock()
			}
			if f != nil {
				r := bufio.NewReader(io.NewSectionReader(f, pos, fi.Size()-pos))
				for {
					b, err := r.ReadBytes('\n')
					if len(b) > 0 && b[len(b)-1] == '\n' {
						c.parse(bytes.TrimRight(append(partial, b...), "\r\n"))
						partial = nil
					} else if len(b) > 0 {
						partial = append(partial, b...) // a line still being written
					}
					pos += int64(len(b))
					if errors.Is(err, io.EOF) || err != nil {
						break
					}
				}
				c.mu.Lock()
				c.offset = pos
				c.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
