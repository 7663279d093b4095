// Package replay serves an archive's captures to people and programs: the
// access routes of `wayside serve`, laid out as pywb lays them out, over a
// capture index (package captureindex) and the WARC files it points into.
//
//	/<coll>/cdx?url=…                       CDX API (pywb's, with OutbackCDX's aliases)
//	/<coll>/timemap/link/<URI-R>            Memento TimeMap (RFC 7089), link format
//	/<coll>/timemap/json/<URI-R>            … as pywb's JSON lines (also timemap/cdxj)
//	/<coll>/timemap/<fmt>/<14 digits>/<URI-R>  a later page of a paged TimeMap
//	/<coll>/<URI-R>                         TimeGate (Accept-Datetime)
//	/<coll>/<timestamp>id_/<URI-R>          raw memento: the archived payload, byte for byte
//	/<coll>/<timestamp>[mod]/<URI-R>        memento for browsers: links rewritten into the archive
//
// <coll> is a collection (a capture index scope). The URI-R may carry a
// query; "http://" is assumed when it has no scheme.
//
// Records are read where they live, through warcfile.Locations: a file
// the index names by base name is looked up in the WARC directories, one
// named by location URL (s3://…, http(s)://…, file://…) is read by range.
// Before a byte of a record is sent, the file must hold the record's
// whole length and the record there must be the one indexed (record ID,
// target URI, date); a file cut or replaced after indexing is an error
// naming the file and offset.
//
// # CDX API
//
// Parameters follow pywb's CDX server API: url (with * prefix and *.
// domain wildcards), matchType=exact|prefix|host|domain (key ranges as
// pywb's calc_search_range), from and to (1 to 14 digits, padded down and
// up), limit (capped by Options.MaxResults; negative: the last N, at most 10,000),
// sort=reverse, sort=closest with closest=<timestamp> or "now" (exact
// matches only, as OutbackCDX; an empty closest is the default order, as
// pywb's remote index source sends it), filter in pywb's syntax ([!][=|~]field:expression:
// contains, equals, regular expression from the start; several are ANDed),
// fl (or fields), output=cdxj (default: the lines `wayside cdxj` writes),
// json (pywb's JSON lines), text (the 11-field CDX layout) or link
// (mementos in link format, as URI-Ms). Field names are pywb's (urlkey,
// timestamp, url, mime, status, digest, length, offset, filename,
// mime-detected) with OutbackCDX's and Wayback's aliases (original,
// mimetype, statuscode, ...). Revisits are listed with mime "warc/revisit".
// page, pageSize and showNumPages=true page through a large answer. The
// answer is streamed: a huge result set costs no memory. An unknown
// collection is a 404; nothing found is an empty 200 (what crawlers'
// dedup clients expect of a CDX server).
//
// # Memento
//
// A TimeMap lists every memento of a URI-R in time order; past
// Options.PageSize entries it is paged (rel="timemap" with from, and a
// Link header rel="next"). A TimeGate answers 302 to the memento closest to
// Accept-Datetime (the latest without it; ties go to the earlier) with
// Vary: accept-datetime and Link: original, timemap, first/prev/next/last
// mementos. A malformed Accept-Datetime or timestamp is a 400; a URI-R
// without mementos a 404. A memento request whose timestamp is not exactly
// a capture's is redirected to the closest capture's URI-M. Every memento
// carries Memento-Datetime and Link (original, timegate, timemap, memento).
//
// # Replay
//
// Raw (id_) replay sends the archived status line, the payload exactly as
// recorded (transfer coding removed, content encoding kept) and the
// archived headers after the header rules (ArchivedHeaders, after pywb's):
// headers that would act on the archive itself (Date, Set-Cookie, Server,
// caching, Strict-Transport-Security, Clear-Site-Data, WWW-Authenticate,
// Access-Control-*, unknown ones, ...) are sent as X-Archive-Orig-<name>,
// and so are Location and Content-Location (a raw archived redirect never
// leads off the archive), the body
// framing is the archive's own; a Content-Security-Policy: sandbox keeps a
// raw page opened in a browser from acting with the archive's origin. A
// revisit is served with its own status
// line and headers and its original's payload, found through the capture
// index; a server-not-modified revisit with its original's status and
// headers updated by its own.
//
// Rewritten replay (any other modifier, or none) decodes HTML and CSS
// bodies (gzip, deflate) up to Options.MaxRewriteBytes and rewrites their
// links (Rewriter: URL attributes, srcset, inline and <style> CSS, meta
// refresh, <base>; url() and @import in CSS) to URI-Ms at the page's
// timestamp, which the archive redirects to each resource's temporally
// closest capture. Location, Content-Location and Refresh are rewritten
// too. A Content-Security-Policy keeps the page inside the archive: a link
// rewriting missed (a URL built by a script) fails instead of reaching the
// live web, and Handler.RefererTarget redirects host-relative ones back
// into the archive using the Referer. No banner is inserted: the bytes a
// browser gets are the archived page with its links changed, nothing
// else.
//
// # Fuzzy matching and aliases
//
// A memento or TimeGate request for a URI-R no capture has falls back, as
// pywb's default fuzzy rules do, to the capture whose URI equals it once
// cache busters and trackers (Options.FuzzyParams, DefaultFuzzyParams:
// "_", "cb", "nocache", utm_*, ...) are removed from both (session ids
// are already out of every urlkey), the closest in time, or to an alias's
// captures (Options.Aliases, OutbackCDX's @alias lines): a 302 to that
// capture's URI-M with X-Archive-Fallback naming how and which capture.
//
// # Origins and navigation
//
// View.Sandbox serves rewritten mementos in an opaque origin (CSP
// "sandbox allow-scripts") for an origin that also answers an API or
// takes a token. View.Framed shows a browser's top-level navigation to a
// memento (Sec-Fetch-Dest: document) in a script-less frame page whose
// CSP frame-src admits the content origin only and whose iframe sandbox
// lacks allow-top-navigation and allow-popups: Chromium has no CSP
// navigate-to, and this keeps script navigation, window.open, meta
// refresh and link clicks inside the archive. On the API origin the
// frame page frames the content origin; on the content origin such a
// navigation is redirected to it; on a sandboxed origin the memento is
// framed from its own URL with the mp_ modifier.
//
// # Access rules
//
// Rules (Rules: pywb's .aclj files as written, OutbackCDX's rule JSON;
// LoadRules) decide per capture and access point: exclude hides a capture
// as if it were not held (unlisted in the CDX API and TimeMaps, never
// chosen by a TimeGate, a 404 on replay), block lists it but answers its
// replay with 451 and the rule's message, allow shows it. The most
// specific matching rule decides (longest SURT key, then exact, then a
// rule of the request's access point); a rule's date conditions (before,
// after, newer, older) restrict it to some captures, so an embargo is an
// exclude rule with "newer". Options.Rules is read once per request, so
// rules swapped in while serving apply from the next request on. A
// request's View names its access point and the content origin its URI-Ms
// point at; a request carrying a Service-Worker header is refused.
package replay
