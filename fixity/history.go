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
	"io/fs"
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
	KindEvict  = "evict"  // the evidence of a replay was removed (retention budget)
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
	// Evidence is the directory (relative to the store dir) holding the
	// replay's evidence WARCs, EvidenceBytes their size; on an evict
	// record, the directory removed.
	Evidence      string `json:"evidence,omitempty"`
	EvidenceBytes int64  `json:"evidence_bytes,omitempty"`
	// Checks are the guideline 5-7 findings of the replay.
	Checks []Check `json:"checks,omitempty"`
	// Reason says why an accept record was written ("baseline",
	// "seen N times", "operator") or an evict record ("budget").
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
	// ev lists the evidence sets kept, oldest first; evBytes is their
	// total size.
	ev      []keptEvidence
	evBytes int64
	evictMu sync.Mutex // one eviction pass at a time
}

// keptEvidence is one evidence directory the store holds.
type keptEvidence struct {
	urim, manifest, dir string
	bytes               int64
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
	if err := h.sweepEvidenceDir(); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// evidenceRoot is the directory evidence lives in, relative to the store.
const evidenceRoot = "evidence"

// sweepEvidenceDir removes what a crash can leave under evidence/: staged
// sets of replays that were never recorded and kept sets that no live
// record refers to (renamed but not recorded, or evicted but not yet
// deleted). Only directories the log does not refer to are removed.
func (h *History) sweepEvidenceDir() error {
	root := filepath.Join(h.dir, evidenceRoot)
	if err := os.RemoveAll(filepath.Join(root, stagingDir)); err != nil {
		return fmt.Errorf("fixity: open history: clear staged evidence: %w", err)
	}
	live := map[string]bool{}
	for _, e := range h.ev {
		live[filepath.FromSlash(e.dir)] = true
	}
	shards, err := os.ReadDir(root)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("fixity: open history: %w", err)
	}
	for _, sh := range shards {
		if !sh.IsDir() {
			continue
		}
		sets, err := os.ReadDir(filepath.Join(root, sh.Name()))
		if err != nil {
			return fmt.Errorf("fixity: open history: %w", err)
		}
		for _, set := range sets {
			rel := filepath.Join(evidenceRoot, sh.Name(), set.Name())
			if !live[rel] {
				h.log.Warn("fixity: history: removing evidence no record refers to (left by a crash)", "dir", rel)
				if err := os.RemoveAll(filepath.Join(h.dir, rel)); err != nil {
					return fmt.Errorf("fixity: open history: %w", err)
				}
			}
		}
	}
	return nil
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
		if r.Evidence != "" {
			h.ev = append(h.ev, keptEvidence{urim: r.URIM, manifest: r.Manifest, dir: r.Evidence, bytes: r.EvidenceBytes})
			h.evBytes += r.EvidenceBytes
		}
	case KindEvict:
		for i, e := range h.ev {
			if e.dir == r.Evidence {
				h.evBytes -= e.bytes
				h.ev = append(h.ev[:i], h.ev[i+1:]...)
				break
			}
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
// and returns its path relative to the store. m.Evidence is dropped: use
// SaveReplay to keep evidence.
func (h *History) SaveManifest(m *Manifest) (string, error) {
	rel, _, err := h.SaveReplay(m, "")
	return rel, err
}

// stagingDir is where replays write evidence before the sweeper decides
// whether to keep it (under evidence/).
const stagingDir = ".staging"

// StageEvidence returns a new, empty directory inside the store for the
// evidence of one replay (pass it to WithEvidence, then to SaveReplay or
// DiscardEvidence).
func (h *History) StageEvidence() (string, error) {
	root := filepath.Join(h.dir, evidenceRoot, stagingDir)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("fixity: stage evidence: %w", err)
	}
	d, err := os.MkdirTemp(root, "replay-")
	if err != nil {
		return "", fmt.Errorf("fixity: stage evidence: %w", err)
	}
	return d, nil
}

// DiscardEvidence removes a staged evidence directory.
func (h *History) DiscardEvidence(stage string) {
	if stage != "" {
		os.RemoveAll(stage)
	}
}

// SaveReplay durably writes m and, when stage is a staged evidence
// directory holding m's evidence, moves it into the store first (rename,
// directory fsyncs) and points m.Evidence at it. It returns the manifest's
// path and the evidence directory, both relative to the store ("" when
// no evidence is kept).
func (h *History) SaveReplay(m *Manifest, stage string) (rel, evidence string, err error) {
	sum := sha256.Sum256([]byte(m.CanonicalURIM))
	id := hex.EncodeToString(sum[:])
	base := fmt.Sprintf("%s-%d-%s", id[:16], m.Context.Started.UnixNano(), m.Root.String()[:12])
	rel = filepath.Join("manifests", id[:2], base+".json")
	if stage == "" || m.Evidence == nil {
		m.Evidence = nil
		h.DiscardEvidence(stage)
	} else {
		evidence = filepath.Join(evidenceRoot, id[:2], base)
		dst := filepath.Join(h.dir, evidence)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", "", fmt.Errorf("fixity: save evidence: %w", err)
		}
		if err := os.Rename(stage, dst); err != nil {
			return "", "", fmt.Errorf("fixity: save evidence: %w", err)
		}
		for _, d := range []string{filepath.Dir(dst), filepath.Dir(stage)} {
			if err := fsutil.SyncDir(d); err != nil {
				return "", "", fmt.Errorf("fixity: save evidence: %w", err)
			}
		}
		up, err := filepath.Rel(filepath.Dir(rel), evidence)
		if err != nil {
			return "", "", fmt.Errorf("fixity: save evidence: %w", err)
		}
		m.Evidence.Dir = filepath.ToSlash(up)
	}
	if err := writeFileSync(filepath.Join(h.dir, rel), m.Marshal()); err != nil {
		return "", "", fmt.Errorf("fixity: save manifest: %w", err)
	}
	return rel, evidence, nil
}

// EvidenceBytes returns the size of the evidence the store keeps.
func (h *History) EvidenceBytes() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.evBytes
}

// EnforceEvidenceBudget evicts the oldest kept evidence until at most max
// bytes remain: for each set an evict record is appended (fsynced) before
// its directory is removed, so a manifest's evidence reference is always
// either present or explained by the log.
func (h *History) EnforceEvidenceBudget(max int64) error {
	h.evictMu.Lock()
	defer h.evictMu.Unlock()
	for {
		h.mu.Lock()
		if h.evBytes <= max || len(h.ev) == 0 {
			h.mu.Unlock()
			return nil
		}
		victim := h.ev[0]
		h.mu.Unlock()
		if err := h.Append(Record{Kind: KindEvict, URIM: victim.urim, Manifest: victim.manifest, Evidence: victim.dir,
			EvidenceBytes: victim.bytes, Reason: "budget"}); err != nil {
			return err
		}
		if err := os.RemoveAll(filepath.Join(h.dir, filepath.FromSlash(victim.dir))); err != nil {
			return fmt.Errorf("fixity: evict evidence: %w", err)
		}
	}
}

// EvidenceDir returns the absolute evidence directory of a manifest read
// from path (relative Evidence.Dir is relative to the manifest's
// directory), or "" when m keeps none.
func EvidenceDir(m *Manifest, path string) string {
	if m.Evidence == nil {
		return ""
	}
	if filepath.IsAbs(m.Evidence.Dir) {
		return m.Evidence.Dir
	}
	return filepath.Join(filepath.Dir(path), filepath.FromSlash(m.Evidence.Dir))
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
// exists, parses, belongs to the record's URI-M and recomputes to its root;
// the evidence of every replay record that was not evicted exists and
// matches the digests in its manifest; the evidence total is what the log
// says.
func (h *History) Check() error {
	recs, err := h.ReadRecords()
	if err != nil {
		return err
	}
	var errs []error
	evicted := map[string]bool{}
	for _, r := range recs {
		if r.Kind == KindEvict {
			evicted[r.Evidence] = true
		}
	}
	var total int64
	for i, r := range recs {
		if r.Kind == KindReplay && r.Evidence != "" && !evicted[r.Evidence] {
			total += r.EvidenceBytes
			if err := h.checkEvidence(r); err != nil {
				errs = append(errs, fmt.Errorf("record %d: %w", i+1, err))
			}
		}
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
	if got := h.EvidenceBytes(); h.f != nil && got != total {
		errs = append(errs, fmt.Errorf("evidence total %d bytes in memory, the log says %d", got, total))
	}
	return errors.Join(errs...)
}

// checkEvidence checks that the evidence of a replay record is where its
// manifest says, with the recorded sizes and digests.
func (h *History) checkEvidence(r Record) error {
	m, err := h.LoadManifest(r.Manifest)
	if err != nil {
		return err
	}
	if m.Evidence == nil {
		return fmt.Errorf("manifest %s keeps no evidence, the record says %s", r.Manifest, r.Evidence)
	}
	dir := EvidenceDir(m, filepath.Join(h.dir, r.Manifest))
	if want := filepath.Join(h.dir, filepath.FromSlash(r.Evidence)); filepath.Clean(dir) != filepath.Clean(want) {
		return fmt.Errorf("manifest %s: evidence in %s, the record says %s", r.Manifest, dir, want)
	}
	var n int64
	for _, f := range m.Evidence.Files {
		size, sum, err := fileSHA256(filepath.Join(dir, filepath.FromSlash(f.Name)))
		if err != nil {
			return fmt.Errorf("evidence of %s: %w", r.Manifest, err)
		}
		if size != f.Size || sum != f.SHA256 {
			return fmt.Errorf("evidence %s of %s: %d bytes sha256 %s, manifest says %d bytes sha256 %s", f.Name, r.Manifest, size, sum, f.Size, f.SHA256)
		}
		n += size
	}
	if n != r.EvidenceBytes {
		return fmt.Errorf("evidence of %s: %d bytes, the record says %d", r.Manifest, n, r.EvidenceBytes)
	}
	return nil
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
	if errors.Is(err, fs.ErrNotExist) {
		if fi, serr := os.Stat(dir); serr == nil && fi.IsDir() {
			return nil, fmt.Errorf("fixity: %s is not a history store (no history.jsonl): %w", dir, fs.ErrNotExist)
		}
	}
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
