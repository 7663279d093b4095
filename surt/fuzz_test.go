package surt

import (
	"regexp"
	"strings"
	"testing"
)

// urlForm turns a key back into an http URL: "com,example:8080)/a?b" →
// "http://example.com:8080/a?b". ok is false for keys without a host.
func urlForm(key string) (string, bool) {
	host, rest, ok := strings.Cut(key, ")")
	if !ok || !simpleHost.MatchString(host) || !strings.HasPrefix(rest, "/") {
		return "", false // hosts holding ")", ",", ":" or escapes make ambiguous keys
	}
	host, port, hasPort := strings.Cut(host, ":")
	if port == "80" || port == "443" {
		return "", false // kept for another scheme's URL; the http form would drop it
	}
	labels := strings.Split(host, ",")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	u := "http://" + strings.Join(labels, ".")
	if hasPort {
		u += ":" + port
	}
	return u + rest, true
}

var simpleHost = regexp.MustCompile(`^[a-z0-9_-]+(,[a-z0-9_-]+)*(:[0-9]+)?$`)

var unstable = regexp.MustCompile(`(?i)^www\d*\.|sessionid|sessid|sid=|cfid|cftoken`)

// FuzzCanonicalize: no panic; keys hold no whitespace or control bytes; a
// key's URL form canonicalises back to the key, except where IA semantics
// are knowingly not idempotent (only one www label is stripped per pass,
// session-id stripping sees different neighbours after sorting, a "?"
// decoded from %3F in the path becomes a query separator).
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{
		"http://www.Example.com:80/a/../b/?b=2&a=1#top", "https://[::1]:8443/x", "dns:example.org", "mailto:a@b",
		"http://%31%32%37.0.0.1/", "http://b\u00fccher.ch/%E4?x=%25", "http://0x7f.1/", "example.com/a//b/./c/",
		"http://x.com/(S(4hqa0555fwsecu455xqckv45))/mileg.aspx", "http://x/?CFID=1&CFTOKEN=2&a=3",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		key, err := Canonicalize(in)
		if err != nil {
			return
		}
		if strings.ContainsAny(key, " \t\r\n") && !strings.HasPrefix(key, "filedesc") && !strings.HasPrefix(key, "warcinfo") && !strings.HasPrefix(key, "whois://") {
			t.Fatalf("Canonicalize(%q) = %q holds whitespace", in, key)
		}
		u, ok := urlForm(key)
		if !ok || strings.HasPrefix(in, "dns:") || strings.Contains(in, ",") { // a comma in a host is ambiguous in SURT
			return
		}
		path := key[strings.IndexByte(key, ')')+1:]
		if unstable.MatchString(u[len("http://"):]) || strings.Count(path, "?") > 1 || strings.HasPrefix(path, "?") {
			return
		}
		if p, _, _ := strings.Cut(path, "?"); strings.Contains(p, "?") {
			return
		}
		again, err := Canonicalize(u)
		if err != nil {
			t.Fatalf("Canonicalize(%q) = %q, whose URL form %q fails: %v", in, key, u, err)
		}
		if again != key {
			t.Fatalf("Canonicalize(%q) = %q, but its URL form %q gives %q", in, key, u, again)
		}
	})
}
