package surt

import (
	"regexp"
	"strings"
	"sync"
)

// unescapeRepeatedly percent-decodes s until it no longer changes. Invalid
// escapes ("%zz", a lone "%") are kept as they are; decoded bytes are kept raw.
func unescapeRepeatedly(s string) string {
	for strings.IndexByte(s, '%') >= 0 {
		u := unescape(s)
		if u == s {
			break
		}
		s = u
	}
	return s
}

func unescape(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			if b == nil {
				b = make([]byte, 0, len(s))
				b = append(b, s[:i]...)
			}
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		if b != nil {
			b = append(b, s[i])
		}
	}
	if b == nil {
		return s
	}
	return string(b)
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// safe reports the bytes escapeOnce leaves alone: printable ASCII except
// '#' and '%' (Python's quote with the library's safe set).
func safe(c byte) bool { return c > 0x20 && c < 0x7f && c != '#' && c != '%' }

// escapeOnce percent-encodes control bytes, space, '#', '%', DEL and every
// byte ≥ 0x80, in upper-case hex.
func escapeOnce(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !safe(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hexdig = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if safe(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', hexdig[c>>4], hexdig[c&15])
		}
	}
	return string(b)
}

// Session-id patterns of webarchive-commons' URLRegexTransformer, applied in
// order, each to the result of the previous one.
// They are compiled on first use, not at package initialisation.
var (
	pathSessionRes = sync.OnceValue(func() []*regexp.Regexp {
		return []*regexp.Regexp{
			regexp.MustCompile(`(?i)^(.*/)(\((?:[a-z]\([0-9a-z]{24}\))+\)/)([^\?]+\.aspx.*)$`),
			regexp.MustCompile(`(?i)^(.*/)(\([0-9a-z]{24}\)/)([^\?]+\.aspx.*)$`),
		}
	})
	querySessionRes = sync.OnceValue(func() []*regexp.Regexp {
		return []*regexp.Regexp{
			regexp.MustCompile(`(?i)^(.*)(?:jsessionid=[0-9a-zA-Z]{32})(?:&(.*))?$`),
			regexp.MustCompile(`(?i)^(.*)(?:phpsessid=[0-9a-zA-Z]{32})(?:&(.*))?$`),
			regexp.MustCompile(`(?i)^(.*)(?:sid=[0-9a-zA-Z]{32})(?:&(.*))?$`),
			regexp.MustCompile(`(?i)^(.*)(?:aspsessionid[a-zA-Z]{8}=[a-zA-Z]{24})(?:&(.*))?$`),
			regexp.MustCompile(`(?i)^(.*)(?:cfid=[^&]+&cftoken=[^&]+)(?:&(.*))?$`),
		}
	})
)

func stripPathSessionID(p string) string {
	if !strings.Contains(p, ".aspx") || !strings.Contains(p, "(") {
		return p
	}
	for _, re := range pathSessionRes() {
		if m := re.FindStringSubmatch(p); m != nil {
			p = m[1] + m[3]
		}
	}
	return p
}

func stripQuerySessionID(q string) string {
	l := strings.ToLower(q)
	if !strings.Contains(l, "sessionid") && !strings.Contains(l, "sid=") && !strings.Contains(l, "cfid=") {
		return q
	}
	for _, re := range querySessionRes() {
		if m := re.FindStringSubmatch(q); m != nil {
			q = m[1] + m[2]
		}
	}
	return q
}
