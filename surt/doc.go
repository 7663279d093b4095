// Package surt turns URLs into SURT keys with Internet Archive semantics: the
// "urlkey" of CDX and CDXJ indexes as written by pywb, OutbackCDX and the
// Wayback Machine, e.g.
//
//	http://www.Example.com:80/a/../b/?b=2&a=1#top  →  com,example)/b?a=1&b=2
//
// The rules follow the `surt` Python library (internetarchive/surt) and
// webarchive-commons' WaybackURLKeyMaker: the GoogleURLCanonicalizer step
// (percent-decoding repeated to a fixed point and re-encoding once, IDN labels
// to punycode, IPv4 in integer/octal/short forms to dotted quads, dot
// segments and repeated slashes removed, fragment dropped) followed by the
// IAURLCanonicalizer step (lower case, one leading www/wwwN label stripped,
// userinfo dropped, the default port dropped only for its own scheme, path
// and query session ids removed, trailing slash removed except at the root,
// query parameters sorted, empty query dropped), then the host reversed into
// comma-separated labels closed by ")".
//
// Deliberate differences from the Python library, where its output is
// ambiguous or accidental, are listed on Canonicalize.
//
// Normalize reads a SURT written by any tool (upper case, www labels, a host
// root without "/", default ports, Heritrix's "http://(com,example,)/" form)
// back into the canonical form, idempotently; IsCanonical recognises the
// canonical form without allocating. MementoMaps key every lookup and
// every map line through it.
package surt
