package mementomap

import (
	"bytes"
	"fmt"
)

// tokKind is the kind of one level of a key's path in the holdings tree.
type tokKind uint8

const (
	tkHost tokKind = iota // a host label ("com", "example")
	tkRoot                // the path root of a host (")")
	tkSeg                 // a path segment
	tkWild                // a trailing wildcard "*"
)

// token is one level of a key: a span of the key's bytes.
type token struct {
	kind tokKind
	s, e int32
}

// tokenize splits an HxPx key into tree levels:
//
//	com,example)/a/b   -> host com, host example, root, seg a, seg b
//	com,example)/      -> host com, host example, root
//	com,example)/a/*   -> host com, host example, root, seg a, wild
//	com,example,*      -> host com, host example, wild
//	*                  -> wild
func tokenize(key []byte, toks []token) ([]token, error) {
	toks = toks[:0]
	if len(key) == 1 && key[0] == '*' {
		return append(toks, token{kind: tkWild, s: 0, e: 1}), nil
	}
	hostEnd := bytes.IndexByte(key, ')')
	wildHost := false
	if hostEnd < 0 {
		if !bytes.HasSuffix(key, []byte(",*")) {
			return nil, fmt.Errorf("key %q is not a SURT: no ')' and no host wildcard ',*'", key)
		}
		hostEnd = len(key) - 2
		wildHost = true
	}
	if hostEnd == 0 {
		return nil, fmt.Errorf("key %q has an empty host", key)
	}
	for s := 0; ; {
		i := bytes.IndexByte(key[s:hostEnd], ',')
		e := hostEnd
		if i >= 0 {
			e = s + i
		}
		if e == s || (key[s] == '*' && e == s+1) {
			return nil, fmt.Errorf("key %q has an empty or wildcard host label", key)
		}
		toks = append(toks, token{kind: tkHost, s: int32(s), e: int32(e)})
		if i < 0 {
			break
		}
		s = e + 1
	}
	if wildHost {
		return append(toks, token{kind: tkWild, s: int32(len(key) - 1), e: int32(len(key))}), nil
	}
	toks = append(toks, token{kind: tkRoot, s: int32(hostEnd), e: int32(hostEnd + 1)})
	p := hostEnd + 1
	if p == len(key) {
		return toks, nil
	}
	if key[p] != '/' {
		return nil, fmt.Errorf("key %q: the path after ')' must start with '/'", key)
	}
	p++
	if p == len(key) {
		return toks, nil
	}
	for s := p; ; {
		i := bytes.IndexByte(key[s:], '/')
		if i < 0 {
			if len(key) == s+1 && key[s] == '*' {
				return append(toks, token{kind: tkWild, s: int32(s), e: int32(len(key))}), nil
			}
			return append(toks, token{kind: tkSeg, s: int32(s), e: int32(len(key))}), nil
		}
		toks = append(toks, token{kind: tkSeg, s: int32(s), e: int32(s + i)})
		s += i + 1
		if s == len(key) {
			// A trailing '/' ends in an empty segment.
			return append(toks, token{kind: tkSeg, s: int32(s), e: int32(s)}), nil
		}
	}
}

// Candidates appends to dst the keys a lookup of key tries, most specific
// first: the key itself, the wildcard of its own sub-tree ("…/b/*"), the
// wildcards of its parent paths ("…/*", "host)/*"), of its host
// ("host,*"), of each parent host ("…,*" up to "tld,*") and "*". A
// wildcard key starts at its own level. The keys are appended to buf and
// returned as sub-slices of it.
func Candidates(key []byte, buf []byte, dst [][]byte) ([][]byte, []byte, error) {
	var tk [32]token
	toks, err := tokenize(key, tk[:0])
	if err != nil {
		return dst, buf, err
	}
	buf = buf[:0]
	type span struct{ s, e int }
	var spans [64]span
	sp := spans[:0]
	add := func(parts ...[]byte) {
		s := len(buf)
		for _, p := range parts {
			buf = append(buf, p...)
		}
		sp = append(sp, span{s, len(buf)})
	}
	last := toks[len(toks)-1]
	nHost := 0
	for _, t := range toks {
		if t.kind == tkHost {
			nHost++
		}
	}
	hasRoot := nHost < len(toks) && toks[nHost].kind == tkRoot
	if last.kind != tkWild {
		add(key)
	}
	if hasRoot {
		// Path levels: the deepest path node is the last segment (or the
		// root when the key has no segment).
		deepest := len(toks) - 1
		if last.kind == tkWild {
			deepest--
		}
		for d := deepest; d >= nHost; d-- {
			// "host)/*" for the path root, "host)/a/b/*" for a segment.
			add(key[:toks[d].e], []byte("/*"))
		}
	}
	top := nHost
	if !hasRoot && last.kind == tkWild {
		top = len(toks) - 1 // "a,b,*": start at host b's own wildcard
	}
	for d := top - 1; d >= 0; d-- {
		add(key[:toks[d].e], []byte(",*"))
	}
	add([]byte("*"))
	for _, s := range sp {
		dst = append(dst, buf[s.s:s.e:s.e])
	}
	return dst, buf, nil
}
