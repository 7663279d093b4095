package fixity

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wayside-archive/wayside/fixity/merkle"
	"github.com/wayside-archive/wayside/internal/fsutil"
)

// Record kinds in the history log.
const (
	KindReplay = "replay" // one replay (after retries) of one URI-M
	KindAccept = "accept" // a root joins the accepted-state set of a URI-M
)

// Record is one line of the history log.
type Record struct {
	Kind    string    `json:"kind"`
	Time    time.Time `json:"time"`
	Sweep   string    `json:"sweep,omitempty"`
	URIM    string    `json:"urim"` // canonical URI-M
	Archive string    `json:"archive,omitempty"`
	Root    string    `json:"root,omitempty"`
	// Class is the change class against the previous comparable replay
	// (ClassNone, ClassAccepted, ClassTransient or a change class).
	Class     Class            `json:"class,omitempty"`
	Transient bool             `json:"transient,omitempty"`
	Attempts  int              `json:"attempts,omitempty"`
	Errors    []string         `json:"errors,omitempty"`
	Changed   []ResourceChange `json:"changed,omitempty"`
	Manifest  string           `json:"manifest,omitempty"` // path relative to the store dir
	// Reason says why an accept record was written ("baseline",
	// "seen N times", "operator").
	Reason string `json:"reason,omitempty"`
}

// MementoState is what the history knows about one URI-M.
type MementoState struct {
	// Accepted is the accepted-state set: roots that are not a change.
	Accepted []merkle.Hash
	// Seen counts comparable replays per root.
	Seen map[merkle.Hash]int
	// Last is the last comparable (non-transient) replay, or nil.
	Last *Record
}

// History is a durable, append-only store of replay results: a JSONL log
// (history.jsonl, one fsynced line per record) and one manifest file per
// replay, written and fsynced before the log line that refers to it, so no
// record ever points at nothing. A torn last line left by a crash is
// detected on open, logged as a warning, and cut off before the next append.
// A corrupt line elsewhere is an error naming the file and line.
type History struct {
	dir  string
	log  *slog.Logger
	mu   sync.Mutex
	f    *os.File
	lock *os.File
	path string
	size int64 // bytes of complete records in the log
	st   map[string]*MementoState
}

// OpenHistory opens (creating if needed) the store in dir. Only one process
// may hold a store open; a second OpenHistory fails.
func OpenHistory(dir string, logger *slog.Logger) (*History, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		return nil, fmt.Errorf("fixity: open history: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("fixity: open history: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("fixity: open history %s: locked by another process: %w", dir, err)
	}
	path := filepath.Join(dir, "history.jsonl")
	h := &History{dir: dir, path: path, log: logger, lock: lock, st: map[string]*MementoState{}}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("fixity: open history: %w", err)
	}
	good, err := h.load(f, path, h.apply)
	if err != nil {
		f.Close()
		lock.Close()
		return nil, err
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		lock.Close()
		return nil, fmt.Errorf("fixity: open history: cut torn line: %w", err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		lock.Close()
		return nil, fmt.Errorf("fixity: open history: %w", err)
	}
	h.f = f
	h.size = good
	return h, nil
}

// load reads every complete record and returns the offset after the last
// good line.
func (h *History) load(f io.Reader, path string, apply func(Record)) (int64, error) {
	br := bufio.NewReaderSize(f, 1<<20)
	var off int64
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			if len(b) > 0 {
				h.log.Warn("fixity: history: ignoring torn last line (a crash cut it short)", "file", path, "line", line, "bytes", len(b))
			}
			return off, nil
		}
		if err != nil {
			return 0, fmt.Errorf("fixity: read history %s: line %d: %w", path, line, err)
		}
		var r Record
		if err := json.Unmarshal(bytes.TrimSpace(b), &r); err != nil {
			// A bad line followed by more data is corruption, not a torn tail.
			if _, perr := br.Peek(1); perr == nil {
				return 0, fmt.Errorf("fixity: read history %s: line %d: %w", path, line, err)
			}
			h.log.Warn("fixity: history: ignoring unreadable last line", "file", path, "line", line, "err", err)
			return off, nil
		}
		off += int64(len(b))
		apply(r)
	}
}

func (h *History) state(urim string) *MementoState {
	s := h.st[urim]
	if s == nil {
		s = &MementoState{Seen: map[merkle.Hash]int{}}
		h.st[urim] = s
	}
	return s
}

func (h *History) apply(r Record) {
	s := h.state(r.URIM)
	root, err := merkle.ParseHash(r.Root)
	switch r.Kind {
	case KindAccept:
		if err == nil && !containsHash(s.Accepted, root) {
			s.Accepted = append(s.Accepted, root)
		}
	case KindReplay:
		if !r.Transient && err == nil && r.Manifest != "" {
			s.Seen[root]++
			rc := r
			s.Last = &rc
		}
	}
}

func containsHash(l []merkle.Hash, h merkle.Hash) bool {
	for _, x := range l {
		if x == h {
			return true
		}
	}
	return false
}

// Append durably adds a record: it returns once the line is fsynced.
func (h *History) Append(r Record) error {
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("fixity: append history: %w", err)
	}
	b = append(b, '\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f == nil {
		return errors.New("fixity: append history: store is closed")
	}
	if _, err := h.f.Write(b); err != nil {
		return fmt.Errorf("fixity: append history: %w", err)
	}
	if err := h.f.Sync(); err != nil {
		return fmt.Errorf("fixity: append history: fsync: %w", err)
	}
	h.size += int64(len(b))
	h.apply(r)
	return nil
}

// SaveManifest durably writes m (temp file, fsync, rename, directory fsync)
// and returns its path relative to the store.
func (h *History) SaveManifest(m *Manifest) (string, error) {
	sum := sha256.Sum256([]byte(m.CanonicalURIM))
	id := hex.EncodeToString(sum[:])
	rel := filepath.Join("manifests", id[:2], fmt.Sprintf("%s-%d-%s.json", id[:16], m.Context.Started.UnixNano(), m.Root.String()[:12]))
	full := filepath.Join(h.dir, rel)
	if err := writeFileSync(full, m.Marshal()); err != nil {
		return "", fmt.Errorf("fixity: save manifest: %w", err)
	}
	return rel, nil
}

// writeFileSync writes b to path (mode 0600, creating its directory)
// atomically and durably.
func writeFileSync(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(path, 0o600, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// LoadManifest reads a manifest saved in the store.
func (h *History) LoadManifest(rel string) (*Manifest, error) {
	if filepath.IsAbs(rel) || strings.Contains(rel, "..") {
		return nil, fmt.Errorf("fixity: load manifest %q: not a path inside the store", rel)
	}
	return ReadManifest(filepath.Join(h.dir, rel))
}

// Records returns every record, oldest first, read back from the log (see
// ReadRecords). A read error is logged and the records read before it are
// returned.
func (h *History) Records() []Record {
	recs, err := h.ReadRecords()
	if err != nil {
		h.log.Warn("fixity: history records incomplete", "err", err)
	}
	return recs
}

// ReadRecords reads every record back from the log, oldest first. The store
// keeps only per-URI-M state in memory, so a long-running scheduled sweep
// does not grow with its history.
func (h *History) ReadRecords() ([]Record, error) {
	h.mu.Lock()
	size := h.size
	h.mu.Unlock()
	f, err := os.Open(h.path)
	if err != nil {
		return nil, fmt.Errorf("fixity: read history: %w", err)
	}
	defer f.Close()
	var out []Record
	if _, err := h.load(io.LimitReader(f, size), h.path, func(r Record) { out = append(out, r) }); err != nil {
		return out, err
	}
	return out, nil
}

// State returns a copy of what the store knows about a canonical URI-M.
func (h *History) State(urim string) MementoState {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.st[urim]
	if s == nil {
		return MementoState{Seen: map[merkle.Hash]int{}}
	}
	c := MementoState{Accepted: append([]merkle.Hash(nil), s.Accepted...), Seen: map[merkle.Hash]int{}}
	for k, v := range s.Seen {
		c.Seen[k] = v
	}
	if s.Last != nil {
		l := *s.Last
		c.Last = &l
	}
	return c
}

// URIMs returns the canonical URI-Ms the store has records for, sorted.
func (h *History) URIMs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.st))
	for k := range h.st {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Accept adds root to the accepted-state set of the canonical URI-M.
func (h *History) Accept(urim string, root merkle.Hash, reason string) error {
	return h.Append(Record{Kind: KindAccept, URIM: urim, Root: root.String(), Reason: reason})
}

// Check verifies the store's invariants: every replay record's manifest
// exists, parses, belongs to the record's URI-M and recomputes to its root.
func (h *History) Check() error {
	recs, err := h.ReadRecords()
	if err != nil {
		return err
	}
	var errs []error
	for i, r := range recs {
		if r.Kind != KindReplay || r.Manifest == "" {
			continue
		}
		m, err := h.LoadManifest(r.Manifest)
		if err != nil {
			errs = append(errs, fmt.Errorf("record %d: %w", i+1, err))
			continue
		}
		if m.CanonicalURIM != r.URIM || m.Root.String() != r.Root {
			errs = append(errs, fmt.Errorf("record %d: manifest %s is for %s root %s, record says %s root %s", i+1, r.Manifest, m.CanonicalURIM, m.Root, r.URIM, r.Root))
			continue
		}
		if err := Verify(m); err != nil {
			errs = append(errs, fmt.Errorf("record %d: %w", i+1, err))
		}
	}
	return errors.Join(errs...)
}

// Close closes the log and releases the lock.
func (h *History) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var err error
	if h.f != nil {
		err = h.f.Close()
		h.f = nil
	}
	if h.lock != nil {
		h.lock.Close()
		h.lock = nil
	}
	if err != nil {
		return fmt.Errorf("fixity: close history: %w", err)
	}
	return nil
}

// ReadHistory reads the records of the store in dir without opening it for
// writing, so a report can be made while a sweep holds the store. An
// incomplete last line (an append in progress, or a crash) is ignored.
func ReadHistory(dir string) ([]Record, error) {
	path := filepath.Join(dir, "history.jsonl")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("fixity: read history: %w", err)
	}
	defer f.Close()
	h := &History{log: slog.New(slog.DiscardHandler)}
	var out []Record
	if _, err := h.load(f, path, func(r Record) { out = append(out, r) }); err != nil {
		return out, err
	}
	return out, nil
}
