package postdedup

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/wayside-archive/wayside/cdxj"
)

// Revisits already in the input must keep resolving: every record one of
// them refers to is pinned (kept in full). A revisit names its original by
// WARC-Refers-To (record ID), by WARC-Refers-To-Target-URI and -Date, or —
// old Heritrix revisits — by neither, when replay tools match it by URI
// and digest. Pins are found with a sort-join over the manifests, so
// memory stays bounded however many revisits the input holds:
//
//	i TAB record-id             TAB P|E ...
//	d TAB uri TAB date          TAB P|E ...
//	u TAB key TAB uri           TAB P|E ...
//
// A P line comes from a revisit, an E line from a record that could be
// rewritten (carrying its part number and manifest sort prefix). An E line
// sharing its join key with a P line is pinned.

// pinCursor answers "is this entry pinned?" for entries met in manifest
// order, part by part.
type pinCursor struct {
	f    *os.File
	br   *bufio.Reader
	next []byte // "PPP\tprefix" of the next pinned entry; nil at the end
}

func (p *pinCursor) close() {
	if p != nil && p.f != nil {
		p.f.Close()
		os.Remove(p.f.Name())
	}
}

func (p *pinCursor) advance() {
	line, err := p.br.ReadBytes('\n')
	if err != nil || len(line) == 0 {
		p.next = nil
		return
	}
	p.next = bytes.TrimRight(line, "\n")
}

// pinned reports whether the entry with this part and manifest prefix is
// pinned. Calls must come in manifest order.
func (p *pinCursor) pinned(part int, prefix []byte) bool {
	if p == nil || p.br == nil {
		return false
	}
	want := append(fmt.Appendf(nil, "%03d\t", part), prefix...)
	for p.next != nil && bytes.Compare(p.next, want) < 0 {
		p.advance()
	}
	return p.next != nil && bytes.Equal(p.next, want)
}

// linePrefix is the sort prefix of a manifest entry (its first 4 fields).
func (e *Entry) linePrefix() []byte {
	b := append([]byte(e.Key), '\t')
	b = append(b, sortDate(e.Date)...)
	b = append(b, '\t')
	b = append(b, escapeField(e.Path)...)
	b = append(b, '\t')
	return appendOffset(b, e.Offset)
}

// buildPins runs the sort-join; it returns an empty cursor when no input
// record is a revisit.
func buildPins(ctx context.Context, manifests []string, opts ResolveOptions) (*pinCursor, error) {
	join := cdxj.NewSorter(cdxj.SortOptions{MaxMemory: sortMemory(opts.MaxMemory, 1), TempDir: opts.TempDir})
	defer join.Close()
	revisits := 0
	var line []byte
	// add adds a join line of escaped fields, then the tag as it is.
	add := func(tag string, parts ...string) error {
		line = line[:0]
		for i, p := range parts {
			if i > 0 {
				line = append(line, '\t')
			}
			line = append(line, escapeField(p)...)
		}
		if tag != "" {
			line = append(append(line, '\t'), tag...)
		}
		return join.Add(line)
	}
	for part, name := range manifests {
		m, err := OpenManifest(name)
		if err != nil {
			return nil, err
		}
		for {
			if err := ctx.Err(); err != nil {
				m.Close()
				return nil, err
			}
			e, err := m.Next()
			if err != nil {
				m.Close()
				return nil, err
			}
			if e == nil {
				break
			}
			switch {
			case e.IsRevisit() && e.RevisitOf != nil:
				revisits++
				ref := e.RevisitOf
				if ref.RecordID != "" {
					err = add("", "i", ref.RecordID, "P")
				}
				if err == nil && ref.TargetURI != "" && !ref.Date.IsZero() {
					err = add("", "d", ref.TargetURI, sortDate(ref.Date), "P")
				}
				if err == nil && ref.RecordID == "" && (ref.TargetURI == "" || ref.Date.IsZero()) {
					err = add("", "u", e.Key, e.URI, "P")
				}
			case e.CanBeOriginal():
				tag := fmt.Sprintf("%03d\t%s", part, e.linePrefix())
				err = add(tag, "i", e.RecordID, "E")
				if err == nil {
					err = add(tag, "d", e.URI, sortDate(e.Date), "E")
				}
				if err == nil {
					err = add(tag, "u", e.Key, e.URI, "E")
				}
			}
			if err != nil {
				m.Close()
				return nil, err
			}
		}
		m.Close()
	}
	if revisits == 0 {
		return &pinCursor{}, nil
	}
	pinned := cdxj.NewSorter(cdxj.SortOptions{MaxMemory: sortMemory(opts.MaxMemory, 1), TempDir: opts.TempDir, Unique: true})
	defer pinned.Close()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := join.WriteTo(pw)
		pw.CloseWithError(err)
		done <- err
	}()
	br := bufio.NewReaderSize(pr, 256<<10)
	var groupKey []byte
	var havePin bool
	var members [][]byte
	flush := func() error {
		if havePin {
			for _, m := range members {
				if err := pinned.Add(m); err != nil {
					return err
				}
			}
		}
		members, havePin = members[:0], false
		return nil
	}
	for {
		l, err := br.ReadBytes('\n')
		if len(l) == 0 && err != nil {
			break
		}
		l = bytes.TrimRight(l, "\n")
		// The join key is everything before the "P" or "E" field.
		k, tag, ok := splitJoin(l)
		if !ok {
			continue
		}
		if !bytes.Equal(k, groupKey) {
			if err := flush(); err != nil {
				pr.Close()
				return nil, err
			}
			groupKey = append(groupKey[:0], k...)
		}
		if tag == nil {
			havePin = true
		} else {
			members = append(members, append([]byte(nil), tag...))
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if err := <-done; err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(opts.TempDir, "wayside-dedup-pins-*")
	if err != nil {
		return nil, fmt.Errorf("postdedup: pins: %w", err)
	}
	bw := bufio.NewWriter(f)
	if _, err := pinned.WriteTo(bw); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("postdedup: pins: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("postdedup: pins: %w", err)
	}
	c := &pinCursor{f: f, br: bufio.NewReaderSize(f, 64<<10)}
	c.advance()
	return c, nil
}

// splitJoin splits a join line into its key (the type and its 1 or 2
// fields) and, for an E line, the tag after "E" (nil for a P line).
func splitJoin(l []byte) (key, tag []byte, ok bool) {
	n := 2 // "i" lines: type + record id
	if len(l) > 1 && (l[0] == 'd' || l[0] == 'u') {
		n = 3
	}
	end := 0
	for f := 0; f < n; f++ {
		i := bytes.IndexByte(l[end:], '\t')
		if i < 0 {
			return nil, nil, false
		}
		end += i + 1
	}
	key, rest := l[:end-1], l[end:]
	switch {
	case len(rest) == 1 && rest[0] == 'P':
		return key, nil, true
	case len(rest) > 2 && rest[0] == 'E' && rest[1] == '\t':
		return key, rest[2:], true
	}
	return nil, nil, false
}
