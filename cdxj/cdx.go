package cdxj

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/wayside-archive/wayside/internal/excerpt"
)

// Classic CDX layouts (field letters of the " CDX ..." header line).
const (
	// CDX11 is the 11-field layout of Wayback/pywb CDX files.
	CDX11 = "N b a m s k r M S V g"
	// CDX9 is the older 9-field layout without meta tags and length.
	CDX9 = "N b a m s k r V g"
	// CDX7 is the short layout some dedup endpoints return
	// (urlkey timestamp original mime status digest length).
	CDX7 = "N b a m s k S"
)

// ParseCDX parses one classic CDX line. layout lists its field letters
// ("N b a m s k r M S V g", as in the " CDX " header line); "" picks the
// layout from the field count (11, 9 or 7 fields). Unknown letters are
// ignored; "-" means absent.
func ParseCDX(line, layout string) (Line, error) {
	fields := strings.Fields(line)
	var letters []string
	if layout == "" {
		switch len(fields) {
		case 11:
			layout = CDX11
		case 9:
			layout = CDX9
		case 7:
			layout = CDX7
		default:
			return Line{}, fmt.Errorf("%w: %d fields; a CDX line without a header has 11, 9 or 7", ErrSyntax, len(fields))
		}
	}
	letters = strings.Fields(layout)
	if len(fields) != len(letters) {
		return Line{}, fmt.Errorf("%w: %d fields, the layout %q has %d", ErrSyntax, len(fields), layout, len(letters))
	}
	l := Line{Length: -1, Offset: -1}
	for i, f := range fields {
		v := f
		if v == "-" {
			v = ""
		}
		switch letters[i] {
		case "N":
			l.Key = f
		case "b":
			if !isTimestamp(f) {
				return Line{}, fmt.Errorf("%w: bad timestamp %s", ErrSyntax, excerpt.Quote(f, 120))
			}
			l.Timestamp = f
		case "a":
			l.URL = v
		case "m":
			l.MIME = v
		case "s":
			if v != "" {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 || n > 999 {
					return Line{}, fmt.Errorf("%w: bad status %s", ErrSyntax, excerpt.Quote(f, 120))
				}
				l.Status = n
			}
		case "k":
			l.Digest = v
		case "r":
			l.Redirect = v
		case "M":
			l.MetaTags = v
		case "S", "V":
			if v == "" {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return Line{}, fmt.Errorf("%w: bad %s field %s", ErrSyntax, letters[i], excerpt.Quote(f, 120))
			}
			if letters[i] == "S" {
				l.Length = n
			} else {
				l.Offset = n
			}
		case "g":
			l.Filename = v
		}
	}
	if l.Key == "" || l.Timestamp == "" {
		return Line{}, fmt.Errorf("%w: layout %q has no N or b field", ErrSyntax, layout)
	}
	return l, nil
}

// Reader reads index lines from CDXJ or classic CDX input, line by line:
// a " CDX ..." header sets the CDX layout, lines starting with "!" (UKVS
// metadata) and blank lines are skipped, a line whose third field starts
// with "{" is CDXJ.
type Reader struct {
	sc     *bufio.Scanner
	name   string
	line   int
	layout string
}

// NewReader reads lines from r; name appears in errors.
func NewReader(r io.Reader, name string) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	return &Reader{sc: sc, name: name}
}

// LineNumber returns the number of the line last read.
func (r *Reader) LineNumber() int { return r.line }

// Text returns the line last read, as it was (without its newline).
func (r *Reader) Text() string { return r.sc.Text() }

// Next returns the next index line, io.EOF at the end, or an error naming
// the input and line number. After a syntax error Next may be called again
// to continue with the following line.
func (r *Reader) Next() (Line, error) {
	for r.sc.Scan() {
		r.line++
		s := strings.TrimRight(r.sc.Text(), "\r")
		if strings.TrimSpace(s) == "" || strings.HasPrefix(s, "!") {
			continue
		}
		if strings.HasPrefix(s, " CDX ") || strings.HasPrefix(s, "CDX ") {
			r.layout = strings.TrimSpace(strings.TrimSpace(s)[len("CDX"):])
			continue
		}
		var l Line
		var err error
		if isCDXJ(s) {
			l, err = Parse(s)
		} else {
			l, err = ParseCDX(s, r.layout)
		}
		if err != nil {
			return Line{}, fmt.Errorf("cdxj: %s line %d: %w", r.name, r.line, err)
		}
		return l, nil
	}
	if err := r.sc.Err(); err != nil {
		return Line{}, fmt.Errorf("cdxj: %s line %d: %w", r.name, r.line+1, err)
	}
	return Line{}, io.EOF
}

func isCDXJ(s string) bool {
	_, rest, _ := strings.Cut(s, " ")
	_, rest, _ = strings.Cut(rest, " ")
	return strings.HasPrefix(strings.TrimLeft(rest, " "), "{")
}
