package cdxj

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/wayside-archive/wayside/warcio"
)

// IndexOptions control which records become index lines.
type IndexOptions struct {
	// Filename is written in every line; "" uses the file's base name
	// without a trailing ".open" (the name the file will have once closed).
	Filename string
	// All indexes every record with a target URI, request and warcinfo
	// records and application/warc-fields metadata included. By default
	// the records pywb's indexer skips are skipped.
	All bool
	// Verify checks each record's WARC-Block-Digest (a mismatch is a
	// problem: the stored record is damaged) and compares the payload
	// digest header with the digest computed over the de-chunked payload
	// (a mismatch is counted in Stats; for chunked responses it is the
	// known writer bug of digesting the transfer encoding).
	Verify bool
}

// Stats counts what IndexFile did.
type Stats struct {
	Records   int   // records read
	Lines     int   // index lines emitted
	RawBytes  int64 // stored bytes of the records read (compressed size)
	DataBytes int64 // uncompressed bytes read
	// Problems lists records that could not be read or indexed, or that
	// failed verification; indexing continued past each.
	Problems []error
	// BlockDigestsVerified and PayloadDigestMismatches count Verify's work;
	// ChunkedDigestMismatches are the mismatches on chunked responses.
	BlockDigestsVerified    int
	PayloadDigestMismatches int
	ChunkedDigestMismatches int
}

// FileName returns the name a WARC file is indexed under: its base name
// without a ".open" suffix.
func FileName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".open")
}

// IndexFile reads the WARC file at path and calls emit with the index line
// of every record that pywb's cdx-indexer would index (response, revisit,
// resource, metadata other than application/warc-fields, conversion…;
// not request or warcinfo unless opts.All). Unreadable records are recorded
// in Stats.Problems and skipped; the returned error is for failures that
// stop indexing (opening the file, emit's error, ctx).
func IndexFile(ctx context.Context, path string, opts IndexOptions, emit func(*Line) error) (Stats, error) {
	// A complete file is read mapped (its gzip members inflate straight
	// from the mapping: less CPU); a writer's ".open" file may still grow,
	// so it is read through a buffer.
	// Without Verify the declared payload digest is what the line carries:
	// a payload is hashed only when its record declares none.
	r, err := warcio.Open(path, warcio.Options{BlockDigest: opts.Verify, PayloadDigestIfUndeclared: !opts.Verify,
		Map: !strings.HasSuffix(path, warcio.OpenSuffix)})
	if err != nil {
		return Stats{}, err // warcio's error names the file: no second prefix
	}
	defer r.Close()
	if opts.Filename == "" {
		opts.Filename = FileName(path)
	}
	return Index(ctx, r, opts, emit)
}

// Index is IndexFile over an open reader (open it with
// warcio.Options{BlockDigest: true} for opts.Verify).
func Index(ctx context.Context, r *warcio.Reader, opts IndexOptions, emit func(*Line) error) (Stats, error) {
	var st Stats
	var l Line
	for {
		if st.Records%256 == 0 {
			if err := ctx.Err(); err != nil {
				return st, err
			}
		}
		rec, err := r.Next()
		st.DataBytes = r.DataOffset()
		if err == io.EOF {
			return st, nil
		}
		if err != nil {
			st.Problems = append(st.Problems, err)
			if errors.Is(err, warcio.ErrTruncated) {
				return st, nil
			}
			continue
		}
		st.Records++
		st.RawBytes += rec.Length
		if opts.Verify {
			verify(&st, r.Name(), rec)
		}
		if !Indexed(rec, opts.All) {
			continue
		}
		if rec.Length == 0 {
			st.Problems = append(st.Problems, fmt.Errorf("cdxj: %s offset %d: record shares a gzip member with another record; it cannot be located by offset and length and is not indexed", r.Name(), rec.Offset))
			continue
		}
		l = FromCapture(rec.Capture(opts.Filename))
		if err := emit(&l); err != nil {
			return st, err
		}
		st.Lines++
	}
}

func verify(st *Stats, name string, rec *warcio.Record) {
	if rec.DeclaredBlockDigest != "" && rec.BlockDigest != "" {
		st.BlockDigestsVerified++
		if rec.BlockDigest != rec.DeclaredBlockDigest {
			st.Problems = append(st.Problems, fmt.Errorf("cdxj: %s offset %d: block digest %s does not match WARC-Block-Digest %s: the stored record is damaged", name, rec.Offset, rec.BlockDigest, rec.DeclaredBlockDigest))
		}
	}
	if rec.Type != "revisit" && rec.DeclaredPayloadDigest != "" && rec.PayloadDigest != "" && rec.DeclaredPayloadDigest != rec.PayloadDigest {
		st.PayloadDigestMismatches++
		if rec.HTTP != nil && rec.HTTP.Chunked {
			st.ChunkedDigestMismatches++
		}
	}
}

// Indexed reports whether IndexFile gives rec an index line: the records
// pywb's cdx-indexer indexes, or with all every record with a URL.
func Indexed(rec *warcio.Record, all bool) bool {
	if all {
		return recordURL(rec) != ""
	}
	if rec.TargetURI == "" {
		return false
	}
	switch rec.Type {
	case "request", "warcinfo":
		return false
	}
	return !strings.HasPrefix(strings.ToLower(strings.TrimSpace(rec.ContentType)), "application/warc-fields")
}

// recordURL is the URL a record is indexed under: its target URI, or for
// a warcinfo record without one its WARC-Filename (as pywb does).
func recordURL(rec *warcio.Record) string {
	if rec.TargetURI == "" && rec.Type == "warcinfo" {
		return rec.Header("WARC-Filename")
	}
	return rec.TargetURI
}
