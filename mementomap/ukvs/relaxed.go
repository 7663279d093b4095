package ukvs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wayside-archive/wayside/internal/excerpt"
)

// NormalizeJSON returns b as strict JSON. Valid JSON is returned unchanged
// (so files written by this package round-trip byte for byte); otherwise b
// is read leniently, as the UKVS draft's examples are written: bare object
// keys ({keys: ["surt"]}), single-quoted strings and trailing commas are
// accepted, and the result is compacted strict JSON on one line.
func NormalizeJSON(b []byte) ([]byte, error) {
	if json.Valid(b) && bytes.IndexByte(b, '\n') < 0 {
		return b, nil
	}
	out, err := relax(b)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, out); err != nil {
		return nil, fmt.Errorf("invalid JSON block %s: %w", excerpt.Quote(b, 80), err)
	}
	return buf.Bytes(), nil
}

func isIdent(c byte) bool {
	return c == '_' || c == '$' || c == '-' || c == '.' || c == '+' ||
		(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// relax rewrites relaxed JSON into JSON: bare words other than literals and
// numbers are quoted, single-quoted strings become double-quoted, trailing
// commas before '}' or ']' are dropped.
func relax(b []byte) ([]byte, error) {
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '"' || c == '\'':
			j := i + 1
			out = append(out, '"')
			for ; j < len(b) && b[j] != c; j++ {
				switch {
				case b[j] == '\\' && j+1 < len(b):
					if b[j+1] == '\'' {
						out = append(out, '\'')
					} else {
						out = append(out, b[j], b[j+1])
					}
					j++
				case b[j] == '"':
					out = append(out, '\\', '"')
				default:
					out = append(out, b[j])
				}
			}
			if j >= len(b) {
				return nil, fmt.Errorf("invalid JSON block %s: unterminated string", excerpt.Quote(b, 80))
			}
			out = append(out, '"')
			i = j + 1
		case isIdent(c):
			j := i
			for j < len(b) && isIdent(b[j]) {
				j++
			}
			w := b[i:j]
			if isLiteral(w) {
				out = append(out, w...)
			} else {
				out = append(out, '"')
				out = append(out, w...)
				out = append(out, '"')
			}
			i = j
		case c == ',':
			k := i + 1
			for k < len(b) && (b[k] == ' ' || b[k] == '\t' || b[k] == '\r' || b[k] == '\n') {
				k++
			}
			if k < len(b) && (b[k] == '}' || b[k] == ']') {
				i = k
				continue
			}
			out = append(out, c)
			i++
		case c == '\n' || c == '\r':
			out = append(out, ' ')
			i++
		default:
			out = append(out, c)
			i++
		}
	}
	if !json.Valid(out) {
		return nil, errors.New("invalid JSON block " + excerpt.Quote(b, 80))
	}
	return out, nil
}

func isLiteral(w []byte) bool {
	switch string(w) {
	case "true", "false", "null":
		return true
	}
	var v any
	return (w[0] == '-' || (w[0] >= '0' && w[0] <= '9')) && json.Unmarshal(w, &v) == nil
}
