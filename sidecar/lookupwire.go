package sidecar

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/dedupindex"
)

// The single-digest lookup (GET /v1/lookup) is the daemon's hottest route:
// crawlers ask it once per fetched response. Its query is read and its
// answer written here without url.Values or reflection when that gives the
// same result; anything out of the ordinary takes the general path (the
// answer is byte for byte what writeJSON would send, see
// TestLookupAnswerSameBytes).

// lookupQuery returns the lookup key fields of a raw query the way
// url.ParseQuery followed by Values.Get reads them (the first value of
// each name; a pair with ';' or a bad escape is skipped). A query of more
// than 17 parameters is left to url.ParseQuery (which refuses whole
// queries above a limit, 10,000 unless GODEBUG urlmaxqueryparams lowers
// it): ok is false.
func lookupQuery(raw string) (k api.Key, ok bool) {
	if strings.Count(raw, "&") > 16 {
		return api.Key{}, false
	}
	var seen [4]bool
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" || strings.Contains(pair, ";") {
			continue
		}
		name, value, _ := strings.Cut(pair, "=")
		if strings.ContainsAny(pair, "%+") {
			var err1, err2 error
			name, err1 = url.QueryUnescape(name)
			value, err2 = url.QueryUnescape(value)
			if err1 != nil || err2 != nil {
				continue
			}
		}
		var i int
		var dst *string
		switch name {
		case "scope":
			i, dst = 0, &k.Scope
		case "digest":
			i, dst = 1, &k.Digest
		case "url":
			i, dst = 2, &k.URL
		case "target_uri":
			i, dst = 3, &k.TargetURI
		default:
			continue
		}
		if !seen[i] {
			seen[i], *dst = true, value
		}
	}
	return k, true
}

// lookupKeyFromQuery reads the key of a GET lookup from r's query.
func lookupKeyFromQuery(r *http.Request) api.Key {
	if k, ok := lookupQuery(r.URL.RawQuery); ok {
		return k
	}
	q := r.URL.Query()
	return api.Key{Scope: q.Get("scope"), Digest: q.Get("digest"), URL: q.Get("url"), TargetURI: q.Get("target_uri")}
}

// jsonPlain reports whether encoding/json writes s as "s" (printable ASCII
// without '"' and '\'; HTML escaping is off in writeJSON).
func jsonPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// appendLookupResult appends res as writeJSON encodes it (encoding/json
// with HTML escaping off, then a newline). ok is false when a field needs
// escaping or the date is not RFC 3339 (the caller then uses writeJSON).
func appendLookupResult(b []byte, res api.LookupResult) (_ []byte, ok bool) {
	if res.Error != "" {
		return b, false
	}
	if !res.Found {
		b = append(b, `{"found":false`...)
	} else {
		b = append(b, `{"found":true`...)
	}
	if o := res.Original; o != nil {
		if b, ok = appendOriginal(append(b, `,"original":`...), o); !ok {
			return b, false
		}
	}
	return append(b, "}\n"...), true
}

func appendOriginal(b []byte, o *dedupindex.Original) (_ []byte, ok bool) {
	for _, s := range [...]string{o.Digest, o.TargetURI, o.RecordID, o.File, o.MIME, o.ETag, o.LastModified} {
		if !jsonPlain(s) {
			return b, false
		}
	}
	str := func(name, v string) {
		b = append(b, name...)
		b = append(b, v...)
		b = append(b, '"')
	}
	str(`{"digest":"`, o.Digest)
	str(`,"target_uri":"`, o.TargetURI)
	b = append(b, `,"date":"`...)
	var err error
	if b, err = o.Date.AppendText(b); err != nil {
		return b, false
	}
	b = append(b, '"')
	str(`,"record_id":"`, o.RecordID)
	str(`,"file":"`, o.File)
	b = strconv.AppendInt(append(b, `,"offset":`...), o.Offset, 10)
	b = strconv.AppendInt(append(b, `,"length":`...), o.Length, 10)
	b = strconv.AppendInt(append(b, `,"payload_length":`...), o.PayloadLength, 10)
	if o.Status != 0 {
		b = strconv.AppendInt(append(b, `,"status":`...), int64(o.Status), 10)
	}
	if o.MIME != "" {
		str(`,"mime":"`, o.MIME)
	}
	if o.ETag != "" {
		str(`,"etag":"`, o.ETag)
	}
	if o.LastModified != "" {
		str(`,"last_modified":"`, o.LastModified)
	}
	return append(b, '}'), true
}

// writeLookupResult answers a lookup with status 200, as writeJSON would.
func writeLookupResult(w http.ResponseWriter, res api.LookupResult) {
	bp := lookupBufPool.Get().(*[]byte)
	defer lookupBufPool.Put(bp)
	b, ok := appendLookupResult((*bp)[:0], res)
	*bp = b
	if !ok {
		writeJSON(w, http.StatusOK, res)
		return
	}
	writeJSONBytes(w, http.StatusOK, b)
}
