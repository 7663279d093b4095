package characterize

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// On disk a Store is a directory holding a snapshot and append-only logs.
// Both are text, one entry a line: eight hex digits of the CRC-32C of the
// JSON that follows, a space, the JSON, a newline. A log line is appended
// and the file fsynced before the entry is applied (and acknowledged); a
// torn last line is cut off at open; a damaged line elsewhere is skipped
// and reported. The snapshot is replaced atomically and names the first log
// generation it does not contain.
const (
	snapshotName = "snapshot"
	logPrefix    = "log."
	storeVersion = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entry is one line of a log or snapshot.
type entry struct {
	// Head is the snapshot's first line.
	Head *snapHead `json:"head,omitempty"`
	// Rec stores (or replaces) a record's characterization.
	Rec *Record `json:"rec,omitempty"`
	// Scan marks a WARC file as read whole at a size.
	Scan *scanMark `json:"scan,omitempty"`
}

type snapHead struct {
	Version int `json:"version"`
	// Gen is the first log generation not contained in the snapshot.
	Gen uint64 `json:"gen"`
}

type scanMark struct {
	File string `json:"file"`
	Size int64  `json:"size"`
}

func appendEntry(buf []byte, e entry) ([]byte, error) {
	js, err := json.Marshal(e)
	if err != nil {
		return buf, fmt.Errorf("characterize: encode entry: %w", err)
	}
	buf = fmt.Appendf(buf, "%08x ", crc32.Checksum(js, castagnoli))
	buf = append(buf, js...)
	return append(buf, '\n'), nil
}

// damage describes an unreadable line.
type damage struct {
	file   string
	offset int64
	err    error
}

func (d damage) Error() string { return fmt.Sprintf("%s offset %d: %v", d.file, d.offset, d.err) }

// readEntries reads the entries of a log or snapshot file, calling fn for
// each good one. It returns the end of the last good line and the damaged
// lines; a damaged last line (a torn write) is reported as torn instead.
func readEntries(path string, fn func(entry) error) (goodEnd int64, bad []damage, torn *damage, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	var off int64
	var pending []damage // damaged lines not (yet) followed by a good one
	for {
		line, rerr := br.ReadBytes('\n')
		if len(line) > 0 {
			e, perr := parseLine(line)
			if perr == nil && rerr == nil {
				if err := fn(e); err != nil {
					return goodEnd, bad, nil, fmt.Errorf("%s offset %d: %w", filepath.Base(path), off, err)
				}
				bad = append(bad, pending...)
				pending = nil
				goodEnd = off + int64(len(line))
			} else {
				if perr == nil {
					perr = errors.New("line not terminated")
				}
				pending = append(pending, damage{file: filepath.Base(path), offset: off, err: perr})
			}
			off += int64(len(line))
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return goodEnd, bad, nil, rerr
		}
	}
	if len(pending) > 0 {
		t := pending[0]
		torn = &t
	}
	return goodEnd, bad, torn, nil
}

func parseLine(line []byte) (entry, error) {
	var e entry
	line = bytes.TrimSuffix(line, []byte("\n"))
	if len(line) < 10 || line[8] != ' ' {
		return e, errors.New("not a store line")
	}
	want, err := strconv.ParseUint(string(line[:8]), 16, 32)
	if err != nil {
		return e, errors.New("bad checksum field")
	}
	js := line[9:]
	if got := crc32.Checksum(js, castagnoli); uint32(want) != got {
		return e, fmt.Errorf("checksum mismatch (%08x, computed %08x)", want, got)
	}
	if err := json.Unmarshal(js, &e); err != nil {
		return e, fmt.Errorf("bad entry: %v", err)
	}
	return e, nil
}

func logName(gen uint64) string { return fmt.Sprintf("%s%016d", logPrefix, gen) }

// listLogs returns the log generations in dir, ascending.
func listLogs(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var gens []uint64
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), logPrefix)
		if !ok || e.IsDir() {
			continue
		}
		g, err := strconv.ParseUint(rest, 10, 64)
		if err != nil {
			continue
		}
		gens = append(gens, g)
	}
	sort.Slice(gens, func(i, j int) bool { return gens[i] < gens[j] })
	return gens, nil
}
