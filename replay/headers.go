package replay

import (
	"net/http"
	"regexp"
	"strings"
	"sync"
)

// OrigPrefix is put before the name of an archived header that is not
// replayed as such (RFC 7089 archives and pywb use it).
const OrigPrefix = "X-Archive-Orig-"

// header rules, after pywb's DefaultHeaderRewriter, with three changes:
// headers pywb passes on unknown are prefixed (an archived "Refresh" or
// "Content-Security-Policy-Report-Only" must not act on the archive),
// Set-Cookie and Link are prefixed (archived cookies are never set on the
// archive's origin; the Link header carries the Memento links), and
// Content-Length is always the archive's own.
const (
	ruleKeep            = iota + 1
	rulePrefix          // the default
	ruleURL             // rewritten to a URI-M in rewritten replay, prefixed raw
	rulePrefixIfContent // prefixed when the body is rewritten (decoded)
	ruleRefresh         // "N; url=..." with the URL rewritten
	ruleDrop            // hop-by-hop: never replayed, not even prefixed
)

var headerRules = map[string]int{
	"allow":               ruleKeep,
	"content-base":        ruleURL,
	"content-disposition": ruleKeep,
	"content-encoding":    rulePrefixIfContent,
	"content-language":    ruleKeep,
	"content-location":    ruleURL,
	"content-range":       ruleKeep,
	"content-type":        ruleKeep,
	"location":            ruleURL,
	"refresh":             ruleRefresh,
	"keep-alive":          ruleDrop,
	// Everything else is prefixed, among them what would act on the
	// archive's origin: Set-Cookie, Strict-Transport-Security,
	// Clear-Site-Data, WWW-Authenticate and Proxy-Authenticate (a login
	// prompt), Access-Control-* (the archive's origin is not the
	// archived site's), Service-Worker-Allowed, Link.
}

// ArchivedHeaders returns the headers to send with an archived response.
// rw is nil for raw (id_) replay: URLs are then kept as archived. rewritten
// tells that the body sent is not the archived one (decoded and
// rewritten), so its Content-Encoding no longer applies. Every header not
// replayed as such is kept as X-Archive-Orig-<name>; the archived
// Content-Length and Transfer-Encoding always are (the archive frames the
// body itself).
func ArchivedHeaders(orig http.Header, rw *Rewriter, rewritten bool) http.Header {
	out := http.Header{}
	for name, vs := range orig {
		rule, ok := headerRules[strings.ToLower(name)]
		if !ok {
			rule = rulePrefix
		}
		for _, v := range vs {
			switch rule {
			case ruleKeep:
				out.Add(name, v)
			case ruleURL:
				if rw == nil {
					// Raw replay: an archived redirect must not send the
					// browser off the archive (an open redirect).
					out.Add(OrigPrefix+name, v)
					continue
				}
				out.Add(name, rw.Location(strings.TrimSpace(v), ""))
			case rulePrefixIfContent:
				if rewritten {
					out.Add(OrigPrefix+name, v)
				} else {
					out.Add(name, v)
				}
			case ruleRefresh:
				if rw != nil {
					if m := refreshHeader().FindStringSubmatch(v); m != nil {
						v = m[1] + rw.URL(m[2], "")
					}
					out.Add(name, v)
				} else {
					out.Add(OrigPrefix+name, v)
				}
			case ruleDrop:
			default:
				out.Add(OrigPrefix+name, v)
			}
		}
	}
	return out
}

var refreshHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^(\s*\d+\s*[;,]\s*url\s*=\s*)(.+)$`) })
