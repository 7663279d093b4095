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
// (FuzzNormalize checks this). One pass over s.
func IsCanonical[S ~string | ~[]byte](s S) bool {
	i := 0
	for i < len(s) && s[i] != ')' {
		i++
	}
	if i == len(s) || !IsCanonicalHost(s[:i], true) {
		return false
	}
	return fastPath(s[i+1:])
}

// Byte classes of the fast paths.
var (
	hostByte  [256]bool // a host label's bytes
	maybeIPv4 [256]bool // bytes of the IPv4 forms Canonicalize converts (digits, hex, "0x")
	pathPlain [256]bool // path bytes needing no further look
)

func init() {
	for c := 0; c < 256; c++ {
		b := byte(c)
		hostByte[c] = b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-' || b == '_'
		maybeIPv4[c] = b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b == 'x'
		pathPlain[c] = safe(b) && b != '/' && b != '.' && b != '(' && b != '?' && !(b >= 'A' && b <= 'Z')
	}
}

// IsCanonicalHost reports whether host (the part of a SURT before ')',
// e.g. "com,example" or "com,example:8080") is certainly canonical: lower
// case labels of letters, digits, '-' and '_', no leading www label, a port
// only when withPort and not a default one, and not what may be an IPv4
// form (which Normalize rewrites).
func IsCanonicalHost[S ~string | ~[]byte](host S, withPort bool) bool {
	labelStart, ip := 0, true
	i := 0
	for ; i < len(host); i++ {
		c := host[i]
		switch {
		case hostByte[c]:
			ip = ip && maybeIPv4[c]
		case c == ',':
			if i == labelStart {
				return false
			}
			labelStart = i + 1
		case c == ':':
			if !withPort || !fastPort(host[i+1:]) {
				return false
			}
			goto end
		default:
			return false
		}
	}
end:
	if i == labelStart || ip {
		return false
	}
	return labelStart == 0 || !isWWW(host[labelStart:i])
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

// fastPath reports whether p, the path of a SURT, is certainly canonical.
func fastPath[S ~string | ~[]byte](p S) bool {
	if len(p) == 0 || p[0] != '/' {
		return false
	}
	if len(p) == 1 {
		return true
	}
	if p[len(p)-1] == '/' {
		return false
	}
	segStart, paren := 1, false
	for i := 1; i <= len(p); i++ {
		if i < len(p) && pathPlain[p[i]] {
			continue
		}
		if i == len(p) || p[i] == '/' {
			// No empty, "." or ".." segment.
			n := i - segStart
			if n == 0 || p[segStart] == '.' && (n == 1 || n == 2 && p[segStart+1] == '.') {
				return false
			}
			segStart = i + 1
			continue
		}
		switch c := p[i]; c {
		case '.':
		case '(':
			paren = true
		case '%':
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
		default:
			return false
		}
	}
	return !paren || !strings.Contains(string(p), ".aspx")
}
