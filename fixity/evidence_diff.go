package fixity

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/wayside-archive/wayside/warcio"
)

// maxEvidenceBody bounds the body read back from an evidence record for a
// comparison.
const maxEvidenceBody = 64 << 20

// EvidenceRecord is one response read back from an evidence WARC.
type EvidenceRecord struct {
	File   string // path of the WARC file
	Offset int64
	URI    string
	Status int
	Header []string // HTTP header lines "Name: value", as stored
	Body   []byte
}

// ReadEvidence reads the evidence record of one side ("rewritten" or
// "raw") of a response. path is the manifest file's path (relative
// evidence directories are relative to it).
func ReadEvidence(m *Manifest, path, side string, p *Response) (*EvidenceRecord, error) {
	if p == nil || p.Evidence == nil {
		return nil, fmt.Errorf("fixity: evidence: no %s record referenced", side)
	}
	ef := m.Evidence.File(side)
	if ef == nil {
		return nil, fmt.Errorf("fixity: evidence: manifest %s lists no %s evidence file", path, side)
	}
	name := filepath.Join(EvidenceDir(m, path), filepath.FromSlash(ef.Name))
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("fixity: evidence: %w (evicted, or moved without its manifest?)", err)
	}
	defer f.Close()
	rec, err := warcio.ReadAt(f, name, p.Evidence.Offset, p.Evidence.Length, warcio.Options{KeepPayload: maxEvidenceBody})
	if err != nil {
		return nil, fmt.Errorf("fixity: evidence: %w", err)
	}
	out := &EvidenceRecord{File: name, Offset: p.Evidence.Offset, URI: rec.TargetURI, Body: rec.Payload}
	if rec.HTTP != nil {
		out.Status = rec.HTTP.Status
		for _, h := range rec.HTTP.Header {
			out.Header = append(out.Header, h.Name+": "+h.Value)
		}
	}
	return out, nil
}

// BytesDiff shows how the recorded bytes of one side of a changed resource
// differ between two replays.
type BytesDiff struct {
	Key          string `json:"key"`
	Side         string `json:"side"`
	Before       string `json:"before"` // evidence file and offset
	After        string `json:"after"`
	BeforeLength int    `json:"before_length"`
	AfterLength  int    `json:"after_length"`
	BeforeSHA256 string `json:"before_sha256"`
	AfterSHA256  string `json:"after_sha256"`
	// Headers lists what differs in the response heads: "-uri"/"+uri"
	// (the URL that answered), "-status"/"+status" and "-Name: v"/"+Name: v".
	Headers []string `json:"headers,omitempty"`
	// FirstDiff is the offset of the first body byte that differs (-1
	// when the bodies are equal).
	FirstDiff int64 `json:"first_diff"`
	// Lines shows the differing lines of text bodies ("-", "+" and " "
	// context), Hex the bytes around FirstDiff of binary ones.
	Lines []string `json:"lines,omitempty"`
	Hex   []string `json:"hex,omitempty"`
	// Error says why no comparison was possible (evidence not kept or
	// evicted).
	Error string `json:"error,omitempty"`
}

// DiffEvidence compares, for the resource key, the evidence records of
// both sides in two manifests (read from pathA and pathB) and returns one
// BytesDiff per side whose recorded bytes differ or cannot be compared.
func DiffEvidence(a *Manifest, pathA string, b *Manifest, pathB string, key string) []BytesDiff {
	ra, rb := resourceFor(a, key), resourceFor(b, key)
	if ra == nil || rb == nil {
		return nil
	}
	var out []BytesDiff
	for _, side := range []string{CaptureRewritten, CaptureRaw} {
		pa, pb := ra.Rewritten, rb.Rewritten
		if side == CaptureRaw {
			pa, pb = ra.Raw, rb.Raw
		}
		if pa == nil && pb == nil {
			continue
		}
		d := BytesDiff{Key: key, Side: side, FirstDiff: -1}
		ea, erra := ReadEvidence(a, pathA, side, pa)
		eb, errb := ReadEvidence(b, pathB, side, pb)
		if erra != nil || errb != nil {
			d.Error = errorsText(map[string]error{"before": erra, "after": errb})
			out = append(out, d)
			continue
		}
		d.Before, d.After = fmt.Sprintf("%s@%d", ea.File, ea.Offset), fmt.Sprintf("%s@%d", eb.File, eb.Offset)
		d.BeforeLength, d.AfterLength = len(ea.Body), len(eb.Body)
		d.BeforeSHA256, d.AfterSHA256 = sha256Hex(ea.Body), sha256Hex(eb.Body)
		d.Headers = lineDiff(ea.Header, eb.Header, 0, 40)
		if ea.Status != eb.Status {
			d.Headers = append([]string{fmt.Sprintf("-status %d", ea.Status), fmt.Sprintf("+status %d", eb.Status)}, d.Headers...)
		}
		if ea.URI != eb.URI {
			d.Headers = append([]string{"-uri " + ea.URI, "+uri " + eb.URI}, d.Headers...)
		}
		if !bytes.Equal(ea.Body, eb.Body) {
			d.FirstDiff = firstDiff(ea.Body, eb.Body)
			if isTextBody(ea.Body) && isTextBody(eb.Body) {
				d.Lines = lineDiff(strings.Split(string(ea.Body), "\n"), strings.Split(string(eb.Body), "\n"), 3, 40)
			} else {
				d.Hex = hexAround(ea.Body, eb.Body, d.FirstDiff)
			}
		}
		if d.FirstDiff >= 0 || len(d.Headers) > 0 {
			out = append(out, d)
		}
	}
	return out
}

func resourceFor(m *Manifest, key string) *Resource {
	for i := range m.Resources {
		if m.Resources[i].Key == key && (m.Resources[i].Included() || m.Resources[i].Excluded == ExcludedWrongStatus) {
			return &m.Resources[i]
		}
	}
	return nil
}

func errorsText(errs map[string]error) string {
	var s []string
	for _, when := range []string{"before", "after"} {
		if e := errs[when]; e != nil {
			s = append(s, when+": "+e.Error())
		}
	}
	return strings.Join(s, "; ")
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func firstDiff(a, b []byte) int64 {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return int64(i)
		}
	}
	return int64(n)
}

// isTextBody reports whether b is UTF-8 text without NUL bytes.
func isTextBody(b []byte) bool {
	return utf8.Valid(b) && !bytes.ContainsRune(b, 0)
}

// lineDiff returns the lines of b that replace lines of a: the common
// leading and trailing lines are cut (ctx of them kept as " " context),
// the rest shown as "-" (from a) and "+" (from b) lines, at most limit of
// each.
func lineDiff(a, b []string, ctx, limit int) []string {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	if p == len(a) && p == len(b) {
		return nil
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	var out []string
	for _, l := range a[max(0, p-ctx):p] {
		out = append(out, " "+l)
	}
	emit := func(sign string, ls []string) {
		for i, l := range ls {
			if i == limit {
				out = append(out, fmt.Sprintf("%s... %d more line(s)", sign, len(ls)-limit))
				break
			}
			out = append(out, sign+l)
		}
	}
	emit("-", a[p:len(a)-s])
	emit("+", b[p:len(b)-s])
	for _, l := range a[len(a)-s : min(len(a), len(a)-s+ctx)] {
		out = append(out, " "+l)
	}
	return out
}

// hexAround dumps 32 bytes of each body from 16 bytes before off.
func hexAround(a, b []byte, off int64) []string {
	start := max(0, int(off)-16)
	dump := func(sign string, x []byte) string {
		end := min(len(x), start+32)
		if start >= end {
			return fmt.Sprintf("%s%08x (end of body at %d)", sign, start, len(x))
		}
		return fmt.Sprintf("%s%08x %s", sign, start, hex.EncodeToString(x[start:end]))
	}
	return []string{dump("-", a), dump("+", b)}
}
