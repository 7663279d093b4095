package crawl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

// ReadOriginal re-reads the payload of an original from its WARC file (in
// the writer's directory or OriginalDirs, under its final name or with the
// ".open" suffix while it is still being written) and checks it against the
// original's payload digest.
func (r *Recorder) ReadOriginal(ctx context.Context, o dedupindex.Original) ([]byte, error) {
	dirs := append([]string{r.opts.Writer.Dir()}, r.opts.OriginalDirs...)
	p, err := readOriginal(ctx, dirs, o)
	if err != nil {
		return nil, err
	}
	return p.payload, nil
}

// ReadPayload reads the HTTP payload of the response record o points at,
// o.File a location resolved as warcfile.Locations resolves it (a base
// name in dirs, a WARC file stored in a WACZ, a location URL).
func ReadPayload(dirs []string, o dedupindex.Original) ([]byte, error) {
	p, err := readOriginal(context.Background(), dirs, o)
	if err != nil {
		return nil, err
	}
	return p.payload, nil
}

func readOriginal(ctx context.Context, dirs []string, o dedupindex.Original) (*httpResponse, error) {
	locs := warcfile.NewLocations(dirs)
	defer locs.Close()
	f, err := locs.Open(ctx, o.File)
	if err != nil {
		return nil, fmt.Errorf("crawl: original %s: %w", o.RecordID, err)
	}
	defer f.Close()
	block, err := readBlockAt(f, o.Offset, o.Length)
	if err != nil {
		return nil, fmt.Errorf("crawl: original %s in %s at offset %d: %w", o.RecordID, o.File, o.Offset, err)
	}
	p, err := parseResponse(block)
	if err != nil {
		return nil, fmt.Errorf("crawl: original %s in %s at offset %d: %w", o.RecordID, o.File, o.Offset, err)
	}
	if want, err := digest.Normalize(o.Digest); err == nil && want != p.digest {
		return nil, fmt.Errorf("crawl: original %s in %s at offset %d: payload digest %s, index says %s", o.RecordID, o.File, o.Offset, p.digest, want)
	}
	return p, nil
}

// readBlockAt reads the record block of the gzip member at off.
func readBlockAt(f io.ReaderAt, off, length int64) ([]byte, error) {
	var src io.Reader = io.NewSectionReader(f, off, 1<<62)
	if length > 0 {
		src = io.NewSectionReader(f, off, length)
	}
	hdr, block, err := warcio.ReadMember(src)
	if err != nil {
		return nil, err
	}
	if t := hdr.Get("Warc-Type"); t != "response" {
		return nil, errors.New("record is a " + t + ", not a response")
	}
	return block, nil
}

// ReadOriginalResponse is ReadOriginal returning the original's HTTP
// response header too.
func (r *Recorder) ReadOriginalResponse(ctx context.Context, o dedupindex.Original) (http.Header, []byte, error) {
	dirs := append([]string{r.opts.Writer.Dir()}, r.opts.OriginalDirs...)
	p, err := readOriginal(ctx, dirs, o)
	if err != nil {
		return nil, nil, err
	}
	return p.header, p.payload, nil
}
