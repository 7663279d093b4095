package dedupindex

import "github.com/wayside-archive/wayside/surt"

// URLKey returns the key under which an original with target URI uri is
// filed in by-URL indexes and matched under the same-URL policy: its SURT
// form (package surt), so http/https and www variants match. A URI that
// cannot be canonicalised is its own key.
func URLKey(uri string) string {
	if k, err := surt.Canonicalize(uri); err == nil {
		return k
	}
	return uri
}
