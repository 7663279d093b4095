package postdedup

import (
	"bytes"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/warcio"
)

// openFiles keeps input files open for random reads.
type openFiles struct {
	mu    sync.Mutex
	files map[string]*os.File
}

func (o *openFiles) get(path string) (*os.File, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if f, ok := o.files[path]; ok {
		return f, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("postdedup: %w", err)
	}
	if o.files == nil {
		o.files = map[string]*os.File{}
	}
	o.files[path] = f
	return f, nil
}

func (o *openFiles) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, f := range o.files {
		f.Close()
	}
	o.files = nil
}

// keyCheck recomputes a record's cluster key so resolve never acts on a
// record whose bytes changed since the manifest was written.
type keyCheck struct {
	source, alg string
	h           hash.Hash // for compute mode with another algorithm than SHA-1
}

func newKeyCheck(h ManifestHeader) *keyCheck {
	k := &keyCheck{source: h.Source, alg: h.Alg}
	if h.Source == SourceCompute && h.Alg != digest.SHA1 {
		k.h, _ = digest.New(h.Alg)
	}
	return k
}

// readChecked reads the record e describes, sending its payload to
// payload (may be nil), and checks that it is still the record the
// manifest describes: same record ID, same key, declared digest borne out.
func readChecked(files *openFiles, kc *keyCheck, e *Entry, payload io.Writer, keepHead bool) (*warcio.Record, error) {
	f, err := files.get(e.Path)
	if err != nil {
		return nil, err
	}
	opts := warcio.Options{Payload: payload, KeepHTTPHead: keepHead}
	if kc.h != nil {
		kc.h.Reset()
		if payload != nil {
			opts.Payload = io.MultiWriter(payload, kc.h)
		} else {
			opts.Payload = kc.h
		}
	}
	rec, err := warcio.ReadAt(f, e.Path, e.Offset, e.Length, opts)
	if err != nil {
		return nil, fmt.Errorf("postdedup: re-read: %w", err)
	}
	c := rec.Capture(e.File)
	key := ""
	switch {
	case kc.h != nil:
		key = digest.FromHash(kc.alg, kc.h).String()
	case kc.source == SourceCompute:
		key = rec.PayloadDigest
	default:
		key, _ = digest.Normalize(c.Digest)
	}
	if rec.RecordID != e.RecordID || rec.Length != e.Length || key != e.Key || c.DigestMismatch || rec.PayloadLength != e.PayloadLength {
		return nil, fmt.Errorf("postdedup: %s offset %d: the record is not what the manifest says (record %s, digest %s, %d payload bytes; manifest: %s, %s, %d): the input changed since the manifest was written",
			e.Path, e.Offset, rec.RecordID, key, rec.PayloadLength, e.RecordID, e.Key, e.PayloadLength)
	}
	return rec, nil
}

// cmpWriter compares the bytes written to it with a reference: in memory
// (ref) or streamed (src). It never fails a write, so the record is read
// to its end either way.
type cmpWriter struct {
	ref    []byte
	src    io.Reader
	n      int64
	differ bool
	buf    []byte
}

func (c *cmpWriter) Write(p []byte) (int, error) {
	if c.differ {
		c.n += int64(len(p))
		return len(p), nil
	}
	if c.src == nil {
		if c.n+int64(len(p)) > int64(len(c.ref)) || !bytes.Equal(c.ref[c.n:c.n+int64(len(p))], p) {
			c.differ = true
		}
	} else {
		for q := p; len(q) > 0 && !c.differ; {
			k := min(len(q), 64<<10)
			if cap(c.buf) < k {
				c.buf = make([]byte, 64<<10)
			}
			if _, err := io.ReadFull(c.src, c.buf[:k]); err != nil || !bytes.Equal(c.buf[:k], q[:k]) {
				c.differ = true
			}
			q = q[k:]
		}
	}
	c.n += int64(len(p))
	return len(p), nil
}

// reference is the payload a cluster's later copies are compared with:
// one original (local or in another collection).
type reference struct {
	orig     Original
	entry    *Entry // local original; nil for an external one
	payload  []byte // loaded lazily; nil while not loaded or when streamed
	loaded   bool
	counted  bool        // counted in the cluster's loaded bytes
	external io.ReaderAt // external original's file (kept open)
}

// class names the scan's equality class of a local reference: the record
// its payload was found equal to during the scan, or itself.
func (ref *reference) class() string {
	if ref.entry == nil {
		return ""
	}
	if ref.entry.SameAs != "" {
		return ref.entry.SameAs
	}
	return entryID(ref.entry.Path, ref.entry.Offset)
}

// memLimit is the largest reference payload held in memory; larger ones
// are streamed from their record for each comparison.
const memLimit = 64 << 20

// sameAs reads the duplicate candidate e and compares its payload byte for
// byte with ref. It returns the record read (with its HTTP head kept).
func (r *resolver) sameAs(ref *reference, e *Entry) (bool, *warcio.Record, error) {
	if ref.orig.PayloadLength != e.PayloadLength {
		return false, nil, nil
	}
	if !ref.loaded && ref.orig.PayloadLength <= min(memLimit, loadMemory(r.opts.MaxMemory)) {
		var buf bytes.Buffer
		buf.Grow(int(ref.orig.PayloadLength))
		if err := r.readReference(ref, &buf); err != nil {
			return false, nil, err
		}
		if int64(buf.Len()) != ref.orig.PayloadLength {
			return false, nil, fmt.Errorf("postdedup: original %s: %d payload bytes, expected %d", ref.orig.RecordID, buf.Len(), ref.orig.PayloadLength)
		}
		ref.payload, ref.loaded = buf.Bytes(), true
	}
	cmp := &cmpWriter{ref: ref.payload}
	var wait func() error
	if !ref.loaded {
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			err := r.readReference(ref, pw)
			pw.CloseWithError(err)
			done <- err
		}()
		cmp.src = pr
		wait = func() error {
			// The reference must end where the candidate ended.
			var one [1]byte
			if n, _ := io.ReadFull(pr, one[:]); n > 0 {
				cmp.differ = true
			}
			pr.Close()
			err := <-done
			if errors.Is(err, io.ErrClosedPipe) {
				err = nil
			}
			return err
		}
	}
	rec, err := readChecked(r.files, r.kc, e, cmp, true)
	if wait != nil {
		if werr := wait(); err == nil && werr != nil {
			err = werr
		}
	}
	if err != nil {
		return false, nil, err
	}
	r.st.BytesCompared += cmp.n
	return !cmp.differ && cmp.n == ref.orig.PayloadLength, rec, nil
}

// readReference reads the reference's payload into w, checking the record.
func (r *resolver) readReference(ref *reference, w io.Writer) error {
	if ref.entry != nil {
		_, err := readChecked(r.files, r.kc, ref.entry, w, false)
		return err
	}
	o := ref.orig
	rec, err := warcio.ReadAt(ref.external, o.File, o.Offset, o.Length, warcio.Options{Payload: w})
	if err != nil {
		return fmt.Errorf("postdedup: original %s in another collection: %w", o.RecordID, err)
	}
	if rec.RecordID != o.RecordID || rec.Capture(o.File).DigestMismatch {
		return fmt.Errorf("postdedup: original %s in another collection: %s offset %d holds record %s", o.RecordID, o.File, o.Offset, rec.RecordID)
	}
	return nil
}

// Original is what a revisit refers to.
type Original struct {
	RecordID string
	URI      string
	// DateText is the original's WARC-Date as written.
	DateText string
	// Digest is the original's payload digest (its Capture digest), which
	// the revisit carries as WARC-Payload-Digest.
	Digest        string
	PayloadLength int64
	// Path and Offset locate a local original (one of the inputs);
	// File, Offset and Length an original in another collection.
	Path     string
	File     string
	Offset   int64
	Length   int64
	External bool
}

func localOriginal(e *Entry) Original {
	d, err := digest.Normalize(e.Capture.Digest)
	if err != nil {
		d = e.Key
	}
	return Original{RecordID: e.RecordID, URI: e.URI, DateText: e.DateText, Digest: d, PayloadLength: e.PayloadLength,
		Path: e.Path, File: filepath.Base(e.Path), Offset: e.Offset, Length: e.Length}
}
