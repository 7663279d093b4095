package surt

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// ErrInvalid is wrapped by every error Canonicalize returns.
var ErrInvalid = errors.New("surt: invalid URL")

// Canonicalize returns the SURT key of rawURL ("com,example)/path?a=1&b=2").
//
// Special inputs keep their Wayback meaning: "filedesc:…", "warcinfo:…" and
// "whois://…" URLs are returned unchanged, and "dns:host" becomes
// "reversed,host)". URLs without a scheme are taken as http. Schemes other
// than http(s) keep their host/path rules; a URL without a host (mailto:)
// becomes "scheme:path".
//
// IPv6 hosts are written as both reference implementations write them:
// without brackets ("https://[2600:1f18::1]/" → "2600:1f18::1)/").
//
// Differences from the Python library, all in inputs it handles ambiguously:
//   - IPv4 hosts written in hex ("0x7f.0.0.1") are converted like the octal and
//     integer forms the library already converts.
//   - an http(s) URL without a host, an unparsable port and an unterminated
//     IPv6 literal are errors (the library raises or returns "http:").
//
// Errors wrap ErrInvalid and quote the input.
func Canonicalize(rawURL string) (string, error) {
	s := strings.Trim(rawURL, " \t\n\r\v\f")
	if strings.ContainsAny(s, "\n\r\t") {
		s = strings.NewReplacer("\n", "", "\r", "", "\t", "").Replace(s)
	}
	if s == "" {
		return "", fmt.Errorf("%w: empty URL", ErrInvalid)
	}
	if strings.HasPrefix(s, "filedesc") || strings.HasPrefix(s, "warcinfo") || strings.HasPrefix(s, "whois://") {
		return s, nil
	}
	if strings.HasPrefix(s, "dns:") {
		h := canonHost(s[4:])
		if h == "" {
			return "", fmt.Errorf("%w: %q has no host", ErrInvalid, rawURL)
		}
		return reverseHost(h) + ")", nil
	}
	u, err := parse(s)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %s", ErrInvalid, rawURL, err)
	}
	return u.key(), nil
}

// url is a parsed URL in the shape of the library's handyurl.
type url struct {
	scheme   string
	host     string // canonical host; "" when absent
	ipv6     bool
	port     int // 0 = none
	path     string
	query    string
	hasQuery bool
}

func hasScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return true
		default:
			return false
		}
	}
	return false
}

func parse(s string) (url, error) {
	if !hasScheme(s) {
		s = "http://" + s
	}
	// "http://https://host" → "https://host" (the last repeated prefix wins).
	for {
		n := 0
		switch {
		case strings.HasPrefix(s, "http://"):
			n = 7
		case strings.HasPrefix(s, "https://"):
			n = 8
		}
		if n == 0 || !(strings.HasPrefix(s[n:], "http://") || strings.HasPrefix(s[n:], "https://")) {
			break
		}
		s = s[n:]
	}
	colon := strings.IndexByte(s, ':')
	u := url{scheme: strings.ToLower(s[:colon])}
	rest := s[colon+1:]
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest = rest[:i]
	}
	var netloc string
	if strings.HasPrefix(rest, "//") {
		rest = rest[2:]
		end := strings.IndexAny(rest, "/?")
		if end < 0 {
			end = len(rest)
		}
		netloc, rest = rest[:end], rest[end:]
	}
	path := rest
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		path, u.query = rest[:i], rest[i+1:]
		u.hasQuery = u.query != ""
	}
	host, port, ipv6, err := splitNetloc(netloc)
	if err != nil {
		return url{}, err
	}
	if host == "" && strings.HasPrefix(u.scheme, "http") && path != "" {
		// "http:////host/path": the host hides in the path.
		p := strings.TrimLeft(path, "/")
		host, path = p, "/"
		if i := strings.IndexByte(p, '/'); i >= 0 {
			host, path = p[:i], p[i:]
		}
		host, port, ipv6, err = splitNetloc(host)
		if err != nil {
			return url{}, err
		}
	}
	if host == "" && (u.scheme == "http" || u.scheme == "https") {
		return url{}, errors.New("no host")
	}
	u.port = port
	u.ipv6 = ipv6
	// GoogleURLCanonicalizer.
	if u.hasQuery {
		u.query = escapeOnce(unescapeRepeatedly(u.query))
	}
	if host != "" {
		if ipv6 {
			u.host = escapeOnce(host)
		} else {
			u.host = canonHost(host)
		}
	}
	path = unescapeRepeatedly(path)
	if u.host != "" {
		path = normalizePath(path)
	}
	path = escapeOnce(path)
	// IAURLCanonicalizer.
	u.host = strings.ToLower(u.host)
	if u.host != "" && !ipv6 {
		u.host = stripWWW(u.host)
	}
	if (u.scheme == "http" && u.port == 80) || (u.scheme == "https" && u.port == 443) {
		u.port = 0
	}
	path = strings.ToLower(path)
	path = stripPathSessionID(path)
	if len(path) > 1 && strings.HasSuffix(path, "/") {
		path = path[:len(path)-1]
	}
	u.path = path
	if u.hasQuery {
		q := stripQuerySessionID(u.query)
		q = strings.ToLower(q)
		q = alphaReorderQuery(q)
		u.query = q
		u.hasQuery = q != ""
	}
	return u, nil
}

// splitNetloc splits "user:pass@host:port" like Python's urlsplit.
func splitNetloc(netloc string) (host string, port int, ipv6 bool, err error) {
	netloc = strings.TrimRight(netloc, ":")
	if i := strings.LastIndexByte(netloc, '@'); i >= 0 {
		netloc = netloc[i+1:]
	}
	var portStr string
	if i := strings.IndexByte(netloc, '['); i >= 0 {
		j := strings.IndexByte(netloc[i:], ']')
		if j < 0 {
			return "", 0, false, errors.New("unterminated IPv6 literal")
		}
		lit := netloc[i+1 : i+j]
		if z := strings.IndexByte(lit, '%'); z >= 0 {
			lit = lit[:z] // zone ids are meaningless outside the capturing host
		}
		if a, perr := netip.ParseAddr(lit); perr != nil || !a.Is6() {
			return "", 0, false, fmt.Errorf("bad IPv6 literal %q", netloc[i:i+j+1])
		}
		host, ipv6 = lit, true
		_, portStr, _ = strings.Cut(netloc[i+j+1:], ":")
	} else {
		host, portStr, _ = strings.Cut(netloc, ":")
	}
	if portStr != "" {
		for i := 0; i < len(portStr); i++ {
			if portStr[i] < '0' || portStr[i] > '9' {
				return "", 0, false, fmt.Errorf("bad port %q", portStr)
			}
		}
		p, perr := strconv.Atoi(portStr)
		if perr != nil || p > 65535 {
			return "", 0, false, fmt.Errorf("port %q out of range", portStr)
		}
		port = p
	}
	return strings.ToLower(host), port, ipv6, nil
}

var idnaProfile = sync.OnceValue(func() *idna.Profile {
	return idna.New(idna.MapForLookup(), idna.Transitional(true), idna.StrictDomainName(false))
})

// canonHost applies the GoogleURLCanonicalizer host rules: unescape, IDN to
// punycode, collapse empty labels, IPv4 forms to dotted quad, lower case,
// escape once.
func canonHost(h string) string {
	h = unescapeRepeatedly(h)
	if !isASCII(h) {
		h = strings.ToValidUTF8(h, "")
		if a, ok := toASCII(h); ok {
			h = a
		}
	}
	h = strings.ReplaceAll(h, "..", ".")
	h = strings.Trim(h, ".")
	if ip, ok := parseIPv4(h); ok {
		return ip
	}
	return escapeOnce(strings.ToLower(h))
}

// toASCII converts each non-ASCII label to punycode (IDNA 2003 mapping, as
// Python's "idna" codec); it fails when any label does.
func toASCII(h string) (string, bool) {
	labels := strings.Split(h, ".")
	for i, l := range labels {
		if isASCII(l) {
			continue
		}
		a, err := idnaProfile().ToASCII(l)
		if err != nil || a == "" || len(a) > 63 {
			return "", false
		}
		labels[i] = a
	}
	return strings.Join(labels, "."), true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// parseIPv4 recognises the IPv4 forms of inet_aton (1 to 4 parts, each
// decimal, octal with a leading 0, or hex with 0x) and a bare integer of any
// size (masked to 32 bits, as the Wayback tools do for liveweb ARC files).
func parseIPv4(h string) (string, bool) {
	if h == "" {
		return "", false
	}
	for i := 0; i < len(h); i++ {
		// Every form is written in hex digits, "x" and dots: any other
		// byte (a host name) rules them all out at once.
		if c := h[i] | 0x20; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == 'x' || h[i] == '.') {
			return "", false
		}
	}
	allDigits := true
	for i := 0; i < len(h); i++ {
		if h[i] < '0' || h[i] > '9' {
			allDigits = false
			break
		}
	}
	if allDigits {
		var v uint32
		for i := 0; i < len(h); i++ {
			v = v*10 + uint32(h[i]-'0') // wraps: keeps the low 32 bits
		}
		return dotted(v), true
	}
	parts := strings.Split(h, ".")
	if len(parts) > 4 {
		return "", false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := parseIPPart(p)
		if !ok {
			return "", false
		}
		vals[i] = v
	}
	var v uint64
	for i, p := range vals[:len(vals)-1] {
		if p > 255 {
			return "", false
		}
		v |= p << (8 * (3 - uint(i)))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-uint(len(vals)))) {
		return "", false
	}
	return dotted(uint32(v | last)), true
}

func parseIPPart(p string) (uint64, bool) {
	base := 10
	switch {
	case p == "":
		return 0, false
	case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
		base, p = 16, p[2:]
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	v, err := strconv.ParseUint(p, base, 32)
	return v, err == nil
}

func dotted(v uint32) string {
	return strconv.Itoa(int(v>>24)) + "." + strconv.Itoa(int(v>>16&0xff)) + "." +
		strconv.Itoa(int(v>>8&0xff)) + "." + strconv.Itoa(int(v&0xff))
}

// stripWWW removes one leading "www." or "wwwN." label.
func stripWWW(h string) string {
	if !strings.HasPrefix(h, "www") {
		return h
	}
	i := 3
	for i < len(h) && h[i] >= '0' && h[i] <= '9' {
		i++
	}
	if i < len(h) && h[i] == '.' {
		return h[i+1:]
	}
	return h
}

// normalizePath resolves "." and ".." segments and collapses empty segments,
// keeping a trailing slash; an empty path becomes "/".
func normalizePath(p string) string {
	if p == "" {
		return "/"
	}
	if isNormalPath(p) {
		return p
	}
	segs := strings.Split(p, "/")[1:]
	kept := make([]string, 0, len(segs))
	for _, s := range segs {
		switch s {
		case ".":
		case "..":
			if len(kept) > 0 {
				kept = kept[:len(kept)-1]
			} else {
				kept = append(kept, s)
			}
		default:
			kept = append(kept, s)
		}
	}
	var b strings.Builder
	b.WriteByte('/')
	for i, s := range kept {
		if i == len(kept)-1 {
			b.WriteString(s)
		} else if s != "" {
			b.WriteString(s)
			b.WriteByte('/')
		}
	}
	return b.String()
}

// isNormalPath reports whether normalizePath would return p unchanged:
// p starts with "/" and has no empty segment but the last, no "." and no
// ".." segment.
func isNormalPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		seg := p[i+1:]
		if j := strings.IndexByte(seg, '/'); j >= 0 {
			if j == 0 {
				return false // "//"
			}
			seg = seg[:j]
		}
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// alphaReorderQuery sorts "k=v" pairs by key then value; a pair without "="
// sorts before the same key with one.
func alphaReorderQuery(q string) string {
	if len(q) <= 1 {
		return q
	}
	args := strings.Split(q, "&")
	sort.SliceStable(args, func(i, j int) bool {
		ki, vi, hi := strings.Cut(args[i], "=")
		kj, vj, hj := strings.Cut(args[j], "=")
		if ki != kj {
			return ki < kj
		}
		if hi != hj {
			return !hi
		}
		return vi < vj
	})
	return strings.Join(args, "&")
}

func reverseHost(h string) string {
	if strings.IndexByte(h, '.') < 0 {
		return h
	}
	var b strings.Builder
	b.Grow(len(h))
	writeReversedHost(&b, h)
	return b.String()
}

// writeReversedHost writes the labels of h in reverse order, joined by
// commas.
func writeReversedHost(b *strings.Builder, h string) {
	for end := len(h); ; {
		i := strings.LastIndexByte(h[:end], '.')
		b.WriteString(h[i+1 : end])
		if i < 0 {
			return
		}
		b.WriteByte(',')
		end = i
	}
}

func (u *url) key() string {
	var b strings.Builder
	b.Grow(len(u.host) + len(u.path) + len(u.query) + 16)
	if u.host == "" {
		b.WriteString(u.scheme)
		b.WriteByte(':')
	} else {
		writeReversedHost(&b, u.host)
		if u.port != 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(u.port))
		}
		b.WriteByte(')')
	}
	if u.path != "" {
		b.WriteString(u.path)
	} else if u.hasQuery {
		b.WriteByte('/')
	}
	if u.hasQuery {
		b.WriteByte('?')
		b.WriteString(u.query)
	}
	return b.String()
}
