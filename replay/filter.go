package replay

import (
	"fmt"
	"regexp"
	"strings"
)

// Field names of the CDX API: pywb's (url, mime, status, ...), with the
// aliases pywb, OutbackCDX and the Wayback CDX server accept.
var fieldAlias = map[string]string{
	"urlkey": "urlkey", "key": "urlkey", "k": "urlkey",
	"timestamp": "timestamp", "t": "timestamp", "datetime": "timestamp",
	"url": "url", "original": "url", "u": "url",
	"mime": "mime", "mimetype": "mime", "m": "mime",
	"status": "status", "statuscode": "status", "s": "status",
	"digest": "digest", "d": "digest",
	"length": "length", "l": "length",
	"offset": "offset", "o": "offset",
	"filename": "filename", "file": "filename", "f": "filename",
	"mime-detected": "mime-detected",
	"redirect":      "redirect", "redirecturl": "redirect",
	"robotflags": "robotflags",
}

// FieldName returns the canonical (pywb) name of a CDX field, or "".
func FieldName(name string) string { return fieldAlias[strings.TrimSpace(name)] }

// Filter is one filter= of a CDX query, in pywb's syntax:
//
//	[!][=|~]field:expression
//
// where the expression must be contained in the field (no modifier),
// equal it (=), or match it from the start as a regular expression (~);
// ! negates.
type Filter struct {
	Field  string
	negate bool
	exact  bool
	re     *regexp.Regexp
	text   string
}

// ParseFilter parses a pywb filter.
func ParseFilter(spec string) (Filter, error) {
	var f Filter
	s := spec
	if strings.HasPrefix(s, "!") {
		f.negate, s = true, s[1:]
	}
	regex := false
	switch {
	case strings.HasPrefix(s, "="):
		f.exact, s = true, s[1:]
	case strings.HasPrefix(s, "~"):
		regex, s = true, s[1:]
	}
	name, expr, ok := strings.Cut(s, ":")
	if !ok || name == "" {
		return f, fmt.Errorf("filter %q: want [!][=|~]field:expression", spec)
	}
	if f.Field = FieldName(name); f.Field == "" {
		return f, fmt.Errorf("filter %q: unknown field %q", spec, name)
	}
	if regex {
		re, err := regexp.Compile(`^(?:` + expr + `)`)
		if err != nil {
			return f, fmt.Errorf("filter %q: %v", spec, err)
		}
		f.re = re
	}
	f.text = expr
	return f, nil
}

// Match reports whether a field value passes the filter.
func (f Filter) Match(v string) bool {
	var m bool
	switch {
	case f.re != nil:
		m = f.re.MatchString(v)
	case f.exact:
		m = v == f.text
	default:
		m = strings.Contains(v, f.text)
	}
	return m != f.negate
}
