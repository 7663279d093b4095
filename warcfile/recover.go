package warcfile

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/warcio"
)

// RecoverOptions configures Recover.
type RecoverOptions struct {
	Logger *slog.Logger
	// NoCDXJ skips rebuilding the CDXJ side file of a recovered WARC file.
	NoCDXJ bool
	// Storage holds the WARC files (default: the directory Recover is
	// given); the side files are in that directory either way.
	Storage Storage
}

// RecoveryReport describes what Recover found.
type RecoveryReport struct {
	Files []RecoveredFile
	// PartialTails counts files that ended in an incomplete record.
	PartialTails int
}

// RecoveredFile describes one leftover ".open" file.
type RecoveredFile struct {
	Open      string // the ".open" file found
	Final     string // the name it was finalised under ("" if removed)
	Records   int    // complete records kept
	KeptBytes int64  // bytes kept (a record boundary)
	TailBytes int64  // bytes of the incomplete tail cut off
	TailFile  string // where the cut-off tail was saved ("" if none)
	Problem   string // why the tail is incomplete ("" if none)
}

// Recover finalises ".open" WARC files left in dir by a process that died
// while writing them.
//
// Each file is scanned member by member with warcio's strict reader
// (warcio.ScanMembers); a record counts as complete when its gzip member
// decompresses cleanly, it is a well-formed WARC record whose block has
// exactly Content-Length bytes followed by CRLF CRLF, and its
// WARC-Block-Digest matches. The file is cut at the end of the last
// complete record before the first incomplete one. Because records are
// appended in order and a record is reported durable only after an fsync
// that covers it, every record a capture event, index entry or revisit can
// refer to lies before that point: the cut never removes a durable record.
// The bytes cut off are not destroyed: they are saved beside the file as
// NAME.warc.gz.partial-tail for inspection, then the file is truncated,
// fsynced and renamed to its final name, and its CDXJ side file is rebuilt
// from the records kept (under cdxj.SideFileName; one under the legacy
// name is removed). A file with no complete record at all is removed (its
// bytes are in the tail file).
func Recover(dir string, opts RecoverOptions) (RecoveryReport, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var rep RecoveryReport
	st, err := storageOf(opts.Storage, dir)
	if err != nil {
		return rep, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return rep, fmt.Errorf("warcfile: recover: read %s: %w", dir, err)
	}
	for _, e := range ents {
		if n := e.Name(); !e.IsDir() && strings.HasPrefix(n, ".") && strings.Contains(n, ".cdxj.tmp-") {
			// A CDXJ rewrite (sort at close, rebuild) cut short by a
			// crash: the file it was replacing is intact.
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				return rep, fmt.Errorf("warcfile: recover: remove stale %s: %w", n, err)
			}
		}
	}
	all, err := st.List()
	if err != nil {
		return rep, fmt.Errorf("warcfile: recover: list %s: %w", dir, err)
	}
	var names []string
	for _, n := range all {
		if strings.HasSuffix(n, warcGzSuffix+OpenSuffix) {
			names = append(names, n)
		}
	}
	for _, name := range names {
		rf, err := recoverFile(st, dir, name, opts.NoCDXJ)
		if err != nil {
			return rep, err
		}
		if rf.Problem != "" {
			rep.PartialTails++
			log.Warn("warcfile: recovered WARC file with an incomplete last record",
				"file", name, "kept_records", rf.Records, "kept_bytes", rf.KeptBytes,
				"tail_bytes", rf.TailBytes, "tail_saved_as", rf.TailFile, "problem", rf.Problem)
		} else {
			log.Info("warcfile: recovered WARC file", "file", name, "records", rf.Records)
		}
		rep.Files = append(rep.Files, rf)
	}
	return rep, nil
}

func recoverFile(st Storage, dir, name string, noCDXJ bool) (RecoveredFile, error) {
	final := strings.TrimSuffix(name, OpenSuffix)
	rf := RecoveredFile{Open: name}
	records, end, size, problem, err := scanFile(st, name)
	if err != nil {
		return rf, err
	}
	rf.Records, rf.KeptBytes, rf.TailBytes = records, end, size-end
	if problem != nil {
		rf.Problem = problem.Error()
	}
	if end < size {
		rf.TailFile = final + ".partial-tail"
		if err := saveTail(st, name, rf.TailFile, end); err != nil {
			return rf, err
		}
	}
	if end == 0 {
		if err := st.Remove(name); err != nil {
			return rf, fmt.Errorf("warcfile: recover: remove empty %s: %w", name, err)
		}
		if err := st.Sync(); err != nil {
			return rf, fmt.Errorf("warcfile: recover: %w", err)
		}
		return rf, nil
	}
	if _, err := st.Stat(final); err == nil {
		return rf, fmt.Errorf("warcfile: recover: %s and %s both exist; leaving both for an operator", name, final)
	}
	f, err := st.Edit(name)
	if err != nil {
		return rf, fmt.Errorf("warcfile: recover: %w", err)
	}
	if end < size {
		if err := f.Truncate(end); err != nil {
			f.Close()
			return rf, fmt.Errorf("warcfile: recover: truncate %s at %d: %w", name, end, err)
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return rf, fmt.Errorf("warcfile: recover: fsync %s: %w", name, err)
	}
	f.Close()
	if !noCDXJ {
		if err := rebuildCDXJ(st, dir, name, final); err != nil {
			return rf, err
		}
	}
	if err := st.Rename(name, final); err != nil {
		return rf, fmt.Errorf("warcfile: recover: rename %s: %w", name, err)
	}
	rf.Final = final
	if err := st.Sync(); err != nil {
		return rf, fmt.Errorf("warcfile: recover: %w", err)
	}
	return rf, nil
}

func saveTail(st Storage, src, dst string, from int64) error {
	in, err := st.Open(src)
	if err != nil {
		return fmt.Errorf("warcfile: recover: %w", err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return fmt.Errorf("warcfile: recover: %w", err)
	}
	if _, err := st.Stat(dst); err == nil {
		if err := st.Remove(dst); err != nil {
			return fmt.Errorf("warcfile: recover: save tail: %w", err)
		}
	}
	out, err := st.Create(dst)
	if err != nil {
		return fmt.Errorf("warcfile: recover: save tail: %w", err)
	}
	if _, err := io.Copy(out, io.NewSectionReader(in, from, fi.Size()-from)); err != nil {
		out.Close()
		return fmt.Errorf("warcfile: recover: save tail to %s: %w", dst, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return fmt.Errorf("warcfile: recover: save tail to %s: %w", dst, err)
	}
	return out.Close()
}

// rebuildCDXJ writes the CDXJ side file of the WARC file name (to be
// named final), sorted, from its records (read with warcio and converted
// with warcio.Record.Capture, as everywhere), replacing any side file a
// crash left half-written, and removes one under the legacy name.
func rebuildCDXJ(st Storage, dir, name, final string) error {
	f, err := st.Open(name)
	if err != nil {
		return fmt.Errorf("warcfile: recover: %w", err)
	}
	defer f.Close()
	r := warcio.NewReader(f, final, warcio.Options{SkipPayloadDigest: true})
	defer r.Close()
	err = cdxj.RebuildSideFile(filepath.Join(dir, cdxj.SideFileName(final)), func(add func(*cdxj.Line) error) error {
		for {
			rec, err := r.Next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				// The file was cut after its last verified record:
				// nothing unreadable is left in it.
				return err
			}
			if !cdxj.HasLine(rec) {
				continue
			}
			l := cdxj.FromCapture(rec.Capture(final))
			if err := add(&l); err != nil {
				return err
			}
		}
	})
	if err != nil {
		return fmt.Errorf("warcfile: recover: %w", err)
	}
	if err := cdxj.RemoveLegacySideFile(dir, final); err != nil {
		return fmt.Errorf("warcfile: recover: %w", err)
	}
	return nil
}

// scanFile reads the stored file name member by member and returns the
// number of complete records, the offset just after the last of them, the
// file size and why scanning stopped early (nil if the whole file is
// complete).
func scanFile(st Storage, name string) (records int, end, size int64, problem, err error) {
	f, err := st.Open(name)
	if err != nil {
		return 0, 0, 0, nil, fmt.Errorf("warcfile: recover: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, 0, nil, fmt.Errorf("warcfile: recover: %w", err)
	}
	size = fi.Size()
	err = warcio.ScanMembers(io.NewSectionReader(f, 0, size), func(off, length int64, _ http.Header, _ []byte) {
		records++
		end = off + length
	})
	if err != nil {
		problem = err
	}
	return records, end, size, problem, nil
}
