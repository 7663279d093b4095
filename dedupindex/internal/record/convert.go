package record

import (
	"fmt"
	"strings"

	"github.com/wayside-archive/wayside/dedupindex"
)

// Kind names a table of interned strings.
type Kind byte

// Interned kinds. The byte values are part of stored layouts.
const (
	KindFile   Kind = 'f' // WARC file names
	KindMIME   Kind = 'm' // MIME types
	KindOrigin Kind = 'o' // "scheme://authority" of target URIs
)

func (k Kind) String() string {
	switch k {
	case KindFile:
		return "file"
	case KindMIME:
		return "MIME"
	case KindOrigin:
		return "origin"
	}
	return fmt.Sprintf("kind %q", byte(k))
}

// Interner returns the id of s in the table of kind, storing it first if
// needed, or 0 to keep s inline (empty, too long, or a kind the backend
// does not intern).
type Interner func(kind Kind, s string) (uint64, error)

// Resolver returns the string an interned id stands for.
type Resolver func(kind Kind, id uint64) (string, error)

// SplitOrigin splits a URI into its origin ("scheme://authority") and the
// rest (path, query, fragment; may be empty). ok is false for URIs without
// an authority ("dns:example.org", "urn:…"), which are kept whole.
func SplitOrigin(uri string) (origin, rest string, ok bool) {
	i := strings.Index(uri, "://")
	if i <= 0 || strings.ContainsAny(uri[:i], "/?#") {
		return "", "", false
	}
	j := strings.IndexAny(uri[i+3:], "/?#")
	if j < 0 {
		return uri, "", true
	}
	return uri[:i+3+j], uri[i+3+j:], true
}

// FromOriginal converts a validated original (dedupindex.CheckOriginal) to
// its stored form, interning file, MIME and origin through intern.
func FromOriginal(o dedupindex.Original, intern Interner) (*Record, error) {
	r := &Record{
		Date:          o.Date,
		TargetURI:     o.TargetURI,
		RecordID:      o.RecordID,
		Offset:        o.Offset,
		Length:        o.Length,
		PayloadLength: o.PayloadLength,
		Status:        o.Status,
		ETag:          o.ETag,
		LastModified:  o.LastModified,
	}
	var err error
	if r.FileID, err = intern(KindFile, o.File); err != nil {
		return nil, err
	}
	if r.FileID == 0 {
		r.File = o.File
	}
	if r.MIMEID, err = intern(KindMIME, o.MIME); err != nil {
		return nil, err
	}
	if r.MIMEID == 0 {
		r.MIME = o.MIME
	}
	if origin, rest, ok := SplitOrigin(o.TargetURI); ok {
		if r.OriginID, err = intern(KindOrigin, origin); err != nil {
			return nil, err
		}
		if r.OriginID != 0 {
			r.TargetURI = rest
		}
	}
	return r, nil
}

// Original converts r back, with digest dig (taken from the key),
// resolving interned ids through name.
func (r *Record) Original(dig string, name Resolver) (dedupindex.Original, error) {
	o := dedupindex.Original{
		Digest:        dig,
		TargetURI:     r.TargetURI,
		Date:          r.Date,
		RecordID:      r.RecordID,
		File:          r.File,
		Offset:        r.Offset,
		Length:        r.Length,
		PayloadLength: r.PayloadLength,
		Status:        r.Status,
		MIME:          r.MIME,
		ETag:          r.ETag,
		LastModified:  r.LastModified,
	}
	var err error
	if r.FileID != 0 {
		if o.File, err = name(KindFile, r.FileID); err != nil {
			return o, err
		}
	}
	if r.MIMEID != 0 {
		if o.MIME, err = name(KindMIME, r.MIMEID); err != nil {
			return o, err
		}
	}
	if r.OriginID != 0 {
		origin, err := name(KindOrigin, r.OriginID)
		if err != nil {
			return o, err
		}
		o.TargetURI = origin + r.TargetURI
	}
	return o, nil
}
