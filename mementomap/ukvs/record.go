package ukvs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wayside-archive/wayside/internal/excerpt"
)

// Record is one data line. Its byte slices may alias a reader's buffer and
// stay valid only until the reader's next call; Clone them to keep them.
type Record struct {
	// Key is the lookup key, for MementoMaps a SURT without query, possibly
	// ending in a wildcard ("com,example)/a/*", "com,example,*", "*").
	Key []byte
	// Freq is the frequency value.
	Freq Freq
	// JSON is the optional single-line JSON block (strict JSON), nil when
	// absent.
	JSON []byte
}

// Clone returns a copy of r that owns its bytes.
func (r Record) Clone() Record {
	c := Record{Key: bytes.Clone(r.Key), Freq: r.Freq}
	if r.JSON != nil {
		c.JSON = bytes.Clone(r.JSON)
	}
	return c
}

// Header is one header line: "!" + Name + " " + Value.
type Header struct {
	// Name is the header's name without the '!' ("context", "meta", ...).
	Name string
	// Value is the rest of the line, strict JSON when it looked like JSON.
	Value []byte
}

// AppendRecord appends r's strict text form, ending in '\n'.
func AppendRecord(dst []byte, r Record) []byte {
	dst = append(dst, r.Key...)
	dst = append(dst, ' ')
	dst = r.Freq.Append(dst)
	if len(r.JSON) > 0 {
		dst = append(dst, ' ')
		dst = append(dst, r.JSON...)
	}
	return append(dst, '\n')
}

// AppendHeader appends h's strict text form, ending in '\n'.
func AppendHeader(dst []byte, h Header) []byte {
	dst = append(dst, '!')
	dst = append(dst, h.Name...)
	if len(h.Value) > 0 {
		dst = append(dst, ' ')
		dst = append(dst, h.Value...)
	}
	return append(dst, '\n')
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// ValidKey checks that k can be written as a key: non-empty, no blanks, no
// control bytes, not starting with '!' (which marks headers).
func ValidKey(k []byte) error {
	if len(k) == 0 {
		return errors.New("empty key")
	}
	if k[0] == '!' {
		return fmt.Errorf("key %s starts with '!' (reserved for headers)", excerpt.Quote(k, 80))
	}
	for _, c := range k {
		if c <= ' ' || c == 0x7f {
			return fmt.Errorf("key %s holds a blank or control byte", excerpt.Quote(k, 80))
		}
	}
	return nil
}

// ParseRecord parses one data line (without its '\n'), leniently: runs of
// blanks between fields, a trailing '\r', and a relaxed JSON block are
// accepted. The returned record aliases line except for a rewritten JSON
// block.
func ParseRecord(line []byte) (Record, error) {
	for len(line) > 0 && (isBlank(line[len(line)-1]) || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	var r Record
	i := 0
	ctl := false
	for i < len(line) && !isBlank(line[i]) {
		ctl = ctl || line[i] < ' ' || line[i] == 0x7f
		i++
	}
	r.Key = line[:i]
	if ctl || i == 0 || r.Key[0] == '!' {
		if err := ValidKey(r.Key); err != nil {
			return Record{}, err
		}
	}
	for i < len(line) && isBlank(line[i]) {
		i++
	}
	j := i
	for j < len(line) && !isBlank(line[j]) {
		j++
	}
	if i == j {
		return Record{}, fmt.Errorf("key %s has no frequency", excerpt.Quote(r.Key, 80))
	}
	var err error
	if r.Freq, err = ParseFreq(line[i:j]); err != nil {
		return Record{}, err
	}
	for j < len(line) && isBlank(line[j]) {
		j++
	}
	if j < len(line) {
		if line[j] != '{' {
			return Record{}, fmt.Errorf("unexpected field %s after the frequency (only one key and one value are supported)", excerpt.Quote(line[j:], 80))
		}
		if r.JSON, err = NormalizeJSON(line[j:]); err != nil {
			return Record{}, err
		}
		if r.JSON[0] != '{' {
			return Record{}, fmt.Errorf("JSON block %s is not an object", excerpt.Quote(line[j:], 80))
		}
	}
	return r, nil
}

// ParseHeader parses a header line (starting with '!').
func ParseHeader(line []byte) (Header, error) {
	line = bytes.TrimRight(line, " \t\r")
	if len(line) < 2 || line[0] != '!' {
		return Header{}, fmt.Errorf("not a header line: %s", excerpt.Quote(line, 80))
	}
	i := 1
	for i < len(line) && !isBlank(line[i]) {
		i++
	}
	h := Header{Name: string(line[1:i])}
	v := bytes.TrimLeft(line[i:], " \t")
	if len(v) == 0 {
		return h, nil
	}
	switch v[0] {
	case '{', '[', '"':
		n, err := NormalizeJSON(v)
		if err != nil {
			return Header{}, fmt.Errorf("header !%s: %w", h.Name, err)
		}
		h.Value = bytes.Clone(n)
	default:
		h.Value = bytes.Clone(v)
	}
	return h, nil
}

// MetaHeader returns a "!meta" header holding v encoded as JSON.
func MetaHeader(v any) (Header, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Header{}, fmt.Errorf("ukvs: meta header: %w", err)
	}
	return Header{Name: "meta", Value: b}, nil
}
