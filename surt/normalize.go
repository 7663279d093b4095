package surt

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Normalize returns the canonical form of a SURT written by any tool, so
// that every spelling of one resource's key compares equal:
//
//	COM,Example,WWW)/A/?b=1    →  com,example)/a?b=1
//	com,example)               →  com,example)/        (host root without "/")
//	http://(com,example,www,)/ →  com,example)/        (Heritrix form)
//	com,example:443)/          →  com,example)/        (default ports)
//	4,3,2,1:8080)/x            →  4,3,2,1:8080)/x
//
// The host is read back into a URL and the URL canonicalised like
// Canonicalize does (lower case, one www label stripped, IPv4 forms, IDN,
// path dots and escapes, trailing "/" removed, query sorted), repeated until
// nothing changes: unlike Canonicalize, Normalize is idempotent. Two rules
// are deliberately lossy, trading a rare false positive for never missing a
// key another tool spelled differently: ports 80 and 443 are dropped
// whatever the scheme was (a SURT does not say), and every leading www label
// is stripped, not only the first.
//
// Keys already in canonical form are recognised without allocating.
// Errors wrap ErrInvalid and quote the input.
func Normalize(s string) (string, error) {
	if IsCanonical(s) {
		return s, nil
	}
	return normalizeSlow(s)
}

// normalizeSlow canonicalises s until it reaches a fixed point.
func normalizeSlow(s string) (string, error) {
	cur := strings.TrimSpace(s)
	for i := 0; i < 8; i++ {
		next, err := normalizeOnce(cur)
		if err != nil {
			return "", fmt.Errorf("%w: SURT %q: %s", ErrInvalid, s, err)
		}
		if next == cur {
			return next, nil
		}
		cur = next
	}
	return "", fmt.Errorf("%w: SURT %q does not reach a canonical form", ErrInvalid, s)
}

// LooksLikeSURT reports whether s is written as a SURT rather than as a URL:
// "com,example)/a", "localhost)", "http://(com,example,)/", or a MementoMap
// wildcard ("com,example,*", "*"). A URL never has ')' before its first '/'.
func LooksLikeSURT(s string) bool {
	s = strings.TrimSpace(s)
	if s == "*" || heritrixPrefix(s) > 0 {
		return true
	}
	if strings.HasSuffix(s, ",*") {
		return !strings.ContainsAny(s, "/?#")
	}
	i := strings.IndexByte(s, ')')
	return i > 0 && !strings.ContainsAny(s[:i], "/?#@ \t([")
}

// heritrixPrefix returns the length of a leading "scheme://(" (Heritrix's
// SURT form), or 0.
func heritrixPrefix(s string) int {
	i := strings.Index(s, "://(")
	if i <= 0 || !hasScheme(s[:i+1]) {
		return 0
	}
	return i + 4
}

// normalizeOnce rewrites s as a URL and canonicalises it once.
func normalizeOnce(s string) (string, error) {
	if n := heritrixPrefix(s); n > 0 {
		s = s[n:]
	}
	h := strings.IndexByte(s, ')')
	if h < 0 {
		return "", errors.New("no ')' ends the host")
	}
	host, path := strings.ToLower(strings.Trim(s[:h], ",")), s[h+1:]
	switch {
	case path == "":
		path = "/"
	case path[0] == '?':
		path = "/" + path
	case path[0] != '/':
		return "", errors.New("the path after ')' must start with '/'")
	}
	if host == "" {
		return "", errors.New("empty host")
	}
	if strings.Count(host, ":") >= 2 && !strings.Contains(host, ",") {
		// IPv6, written without brackets (a port, if any, is part of it).
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() {
			return "", fmt.Errorf("host %q is neither a reversed host name nor an IPv6 address", host)
		}
		return Canonicalize("http://[" + host + "]" + path)
	}
	labels := strings.Split(host, ",")
	port := ""
	last := labels[len(labels)-1]
	if i := strings.IndexByte(last, ':'); i >= 0 {
		last, port = last[:i], last[i+1:]
		labels[len(labels)-1] = last
		n, err := strconv.Atoi(port)
		if err != nil || n < 0 || n > 65535 || strings.ContainsAny(port, "+-") {
			return "", fmt.Errorf("bad port %q", port)
		}
		port = strconv.Itoa(n)
		if n == 80 || n == 443 {
			port = ""
		}
	}
	kept := labels[:0]
	for _, l := range labels {
		if l == "" {
			continue // "com,,example" and Heritrix's trailing ","
		}
		// Bytes that would end the host of the URL are escaped; the
		// canonicaliser decodes them back.
		kept = append(kept, hostEscaper.Replace(l))
	}
	labels = kept
	// Every leading www label goes, not only one (idempotence); a host
	// that is only "www" keeps it, as Canonicalize does.
	for len(labels) > 1 && isWWW(labels[len(labels)-1]) {
		labels = labels[:len(labels)-1]
	}
	var b strings.Builder
	b.WriteString("http://")
	for i := len(labels) - 1; i >= 0; i-- {
		b.WriteString(labels[i])
		if i > 0 {
			b.WriteByte('.')
		}
	}
	if port != "" {
		b.WriteByte(':')
		b.WriteString(port)
	}
	b.WriteString(path)
	return Canonicalize(b.String())
}

var hostEscaper = strings.NewReplacer("/", "%2F", "?", "%3F", "#", "%23", "@", "%40", "[", "%5B", "]", "%5D", ":", "%3A", " ", "%20", "\t", "%09", "\\", "%5C")

// isWWW reports whether a label is "www" or "www" followed by digits.
func isWWW[S ~string | ~[]byte](l S) bool {
	if len(l) < 3 || l[0] != 'w' || l[1] != 'w' || l[2] != 'w' {
		return false
	}
	for i := 3; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

// IsCanonical reports, without allocating, whether s is certainly a
// canonical SURT without query (the common case: keys Canonicalize wrote).
// It may answer false for a canonical SURT (Normalize then takes its slow
// path and returns it unchanged), never true for a non-canonical one
// (FuzzNormalize checks this).
func IsCanonical[S ~string | ~[]byte](s S) bool {
	h := indexByte(s, ')')
	if h <= 0 || h+1 >= len(s) || s[h+1] != '/' {
		return false
	}
	return IsCanonicalHost(s[:h], true) && fastPath(s[h+1:])
}

func indexByte[S ~string | ~[]byte](s S, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// IsCanonicalHost reports whether host (the part of a SURT before ')',
// e.g. "com,example" or "com,example:8080") is certainly canonical: lower
// case labels of letters, digits, '-' and '_', no leading www label, a port
// only when withPort and not a default one, and not an IPv4 form (which
// Normalize rewrites).
func IsCanonicalHost[S ~string | ~[]byte](host S, withPort bool) bool {
	numeric := true // every label digits or 0x-hex: maybe an IPv4 form
	nlabels := 0
	for start := 0; start <= len(host); {
		end := indexByte(host[start:], ',')
		if end < 0 {
			end = len(host)
		} else {
			end += start
		}
		l := host[start:end]
		if end == len(host) {
			if i := indexByte(l, ':'); i >= 0 {
				if !withPort || !fastPort(l[i+1:]) {
					return false
				}
				l = l[:i]
			}
			if nlabels > 0 && isWWW(l) {
				return false
			}
		}
		if len(l) == 0 {
			return false
		}
		digits, hex := true, len(l) > 2 && l[0] == '0' && l[1] == 'x'
		for i := 0; i < len(l); i++ {
			c := l[i]
			switch {
			case c >= '0' && c <= '9':
			case c >= 'a' && c <= 'z' || c == '-' || c == '_':
				digits = false
				if i >= 2 && !(c >= 'a' && c <= 'f') {
					hex = false
				}
			default:
				return false
			}
		}
		numeric = numeric && (digits || hex)
		nlabels++
		start = end + 1
	}
	return !numeric
}

func fastPort[S ~string | ~[]byte](p S) bool {
	if len(p) == 0 || len(p) > 5 || p[0] == '0' {
		return false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
		n = n*10 + int(p[i]-'0')
	}
	return n <= 65535 && n != 80 && n != 443
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

func fastPath[S ~string | ~[]byte](p S) bool {
	if len(p) == 1 {
		return p[0] == '/'
	}
	if p[len(p)-1] == '/' {
		return false
	}
	segStart := 1
	paren := false
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			if n := i - segStart; n == 0 || n == 1 && p[segStart] == '.' || n == 2 && p[segStart] == '.' && p[segStart+1] == '.' {
				return false
			}
			segStart = i + 1
			continue
		}
		c := p[i]
		switch {
		case c <= ' ' || c >= 0x7f || c == '#' || c == '?' || c >= 'A' && c <= 'Z':
			return false
		case c == '(':
			paren = true
		case c == '%':
			// Canonical escapes are lower-case and encode only bytes the
			// escaper must encode; "%25" must not be followed by what a
			// second unescaping would decode.
			if i+2 >= len(p) || !isLowerHex(p[i+1]) || !isLowerHex(p[i+2]) {
				return false
			}
			d := unhex(p[i+1])<<4 | unhex(p[i+2])
			if safe(d) || d == '%' && i+4 < len(p) && isHex(p[i+3]) && isHex(p[i+4]) {
				return false
			}
			i += 2
		}
	}
	return !paren || !strings.Contains(string(p), ".aspx")
}
