package characterize

import (
	"fmt"
	"time"

	memdb "github.com/hashicorp/go-memdb"
)

// Aggregate is what one WARC file holds of one format: payloads (top
// level) and objects found inside payloads (nested), counted and summed
// separately, and the revisits that inherit the format.
type Aggregate struct {
	File          string `json:"file"`
	PUID          string `json:"puid"`
	Name          string `json:"format,omitempty"`
	Version       string `json:"version,omitempty"`
	Objects       int64  `json:"objects"`
	Bytes         int64  `json:"bytes"`
	NestedObjects int64  `json:"nested_objects"`
	NestedBytes   int64  `json:"nested_bytes"`
	Revisits      int64  `json:"revisits,omitempty"`
}

func (a *Aggregate) zero() bool {
	return a.Objects == 0 && a.NestedObjects == 0 && a.Revisits == 0
}

// add adds o's counts to a.
func (a *Aggregate) add(o Aggregate) {
	a.Objects += o.Objects
	a.Bytes += o.Bytes
	a.NestedObjects += o.NestedObjects
	a.NestedBytes += o.NestedBytes
	a.Revisits += o.Revisits
}

// FileSummary is what a WARC file holds overall.
type FileSummary struct {
	File string `json:"file"`
	// Records counts the characterized captures (response, resource,
	// conversion and revisit records); Bytes the payload bytes of the
	// non-revisits.
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
	// Nested counts the objects found inside payloads; Empty the empty
	// payloads (not formats); Revisits the revisits, Unresolved those whose
	// original is not characterized; Noted the records with a note on the
	// payload or a nested object.
	Nested     int64 `json:"nested"`
	Empty      int64 `json:"empty"`
	Revisits   int64 `json:"revisits"`
	Unresolved int64 `json:"unresolved"`
	Noted      int64 `json:"noted"`
	// ScannedSize is the file's size when it was last read whole (0: never
	// read whole): Resync skips a closed file of that size.
	ScannedSize int64 `json:"scanned_size,omitempty"`
}

// Table and index names.
const (
	tabRecords = "records"
	tabAggs    = "aggregates"
	tabFiles   = "files"
)

// keyIndex is a memdb index whose key a function computes; FromArgs takes
// the same arguments as the key function's parts. A trailing NUL ends every
// key, as memdb's own string indexes do, so prefixes work on whole parts.
type keyIndex struct {
	of   func(obj any) (string, bool)
	args func(args []any) (string, error)
}

func (x *keyIndex) FromObject(obj any) (bool, []byte, error) {
	k, ok := x.of(obj)
	if !ok {
		return false, nil, nil
	}
	return true, []byte(k + "\x00"), nil
}

func (x *keyIndex) FromArgs(args ...any) ([]byte, error) {
	k, err := x.args(args)
	if err != nil {
		return nil, err
	}
	return []byte(k + "\x00"), nil
}

// PrefixFromArgs matches whole leading parts: ("FILE") finds every key
// starting with FILE as its first part.
func (x *keyIndex) PrefixFromArgs(args ...any) ([]byte, error) { return x.FromArgs(args...) }

func stringArgs(n int) func([]any) (string, error) {
	return func(args []any) (string, error) {
		if len(args) < 1 || len(args) > n {
			return "", fmt.Errorf("characterize: index wants 1 to %d string arguments, got %d", n, len(args))
		}
		k := ""
		for i, a := range args {
			s, ok := a.(string)
			if !ok {
				return "", fmt.Errorf("characterize: index argument %d is %T, not a string", i, a)
			}
			if i > 0 {
				k += "\x00"
			}
			k += s
		}
		return k, nil
	}
}

// uriDateKey is the original_uri_date key of a URI and a WARC-Date (the
// same instant in any precision or zone gives the same key).
func uriDateKey(uri string, date time.Time) string {
	return uri + "\x00" + date.UTC().Format(time.RFC3339Nano)
}

// recordKey orders records by file, then offset.
func recordKey(file string, offset int64) string { return fmt.Sprintf("%s\x00%016x", file, offset) }

func schema() *memdb.DBSchema {
	rec := func(f func(r *Record) (string, bool)) *keyIndex {
		return &keyIndex{of: func(o any) (string, bool) { return f(o.(*Record)) }, args: stringArgs(2)}
	}
	agg := func(f func(a *Aggregate) string) *keyIndex {
		return &keyIndex{of: func(o any) (string, bool) { return f(o.(*Aggregate)), true }, args: stringArgs(2)}
	}
	return &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		tabRecords: {Name: tabRecords, Indexes: map[string]*memdb.IndexSchema{
			// id: FILE, OFFSET (as recordKey formats it).
			"id": {Name: "id", Unique: true, Indexer: &keyIndex{
				of: func(o any) (string, bool) { r := o.(*Record); return recordKey(r.File, r.Offset), true },
				args: func(args []any) (string, error) {
					if len(args) == 2 {
						f, ok1 := args[0].(string)
						off, ok2 := args[1].(int64)
						if ok1 && ok2 {
							return recordKey(f, off), nil
						}
					}
					return stringArgs(1)(args)
				}}},
			// format: records whose payload is of a PUID.
			"format": {Name: "format", AllowMissing: true, Indexer: rec(func(r *Record) (string, bool) { return r.PUID, r.PUID != "" })},
			// original_id, original_digest: characterized non-revisits a
			// revisit can inherit from.
			"original_id": {Name: "original_id", AllowMissing: true, Indexer: rec(func(r *Record) (string, bool) {
				return r.RecordID, !r.IsRevisit() && r.RecordID != "" && r.PUID != ""
			})},
			"original_digest": {Name: "original_digest", AllowMissing: true, Indexer: rec(func(r *Record) (string, bool) {
				return r.Digest, !r.IsRevisit() && r.Digest != "" && r.PUID != ""
			})},
			// original_uri_date: the same originals by URI and WARC-Date
			// (uriDateKey), for revisits that name their original so.
			"original_uri_date": {Name: "original_uri_date", AllowMissing: true, Indexer: rec(func(r *Record) (string, bool) {
				return uriDateKey(r.URI, r.Date), !r.IsRevisit() && r.URI != "" && !r.Date.IsZero() && r.PUID != ""
			})},
			// revisit_digest: every revisit by digest, resolved or not
			// (a new original may name one better: see applyRecord).
			"revisit_digest": {Name: "revisit_digest", AllowMissing: true, Indexer: rec(func(r *Record) (string, bool) {
				return r.Digest, r.IsRevisit() && r.Digest != ""
			})},
		}},
		tabAggs: {Name: tabAggs, Indexes: map[string]*memdb.IndexSchema{
			"id":     {Name: "id", Unique: true, Indexer: agg(func(a *Aggregate) string { return a.File + "\x00" + a.PUID })},
			"format": {Name: "format", Indexer: agg(func(a *Aggregate) string { return a.PUID + "\x00" + a.File })},
		}},
		tabFiles: {Name: tabFiles, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "File"}},
		}},
	}}
}
