// Package testarchive is a Memento-compliant web archive replay server for
// tests (RFC 7089 headers, pywb/Wayback-style URI-Ms). It serves mementos
// loaded from WARC files — a small built-in site (testdata/site.warc.gz,
// embedded) or any real WARC — on a loopback listener, and can inject on
// demand each kind of replay change the fixity study found.
//
// URI-Ms have the form http://<host>/<coll>/<14-digit timestamp><modifier>/<URI-R>.
// The server:
//   - rewrites links in HTML and CSS to URI-Ms with the page's timestamp
//     and a modifier (im_, cs_, js_, if_), and maps original headers, with
//     package replay — the rewriting Wayside's own archive serves;
//   - injects an archive banner (with a per-request timestamp and a banner
//     image) and a replay script, both under /static/ (replay
//     infrastructure, not mementos);
//   - sends Memento-Datetime, Link (original, timegate, timemap) and the
//     original headers after replay.ArchivedHeaders (X-Archive-Orig-<name>
//     for those that would act on the archive);
//   - serves raw bodies and original headers for the id_ modifier;
//   - redirects a request whose timestamp has no exact memento to the
//     temporally closest one (as public archives do for embedded resources);
//   - redirects requests that escaped rewriting (host-relative paths built by
//     JavaScript) using the Referer, as pywb and Wayback do;
//   - answers on two host names (127.0.0.1:port and the alias localhost:port).
//
// Faults (Server.Inject) change what is served for one URI-R: status flips,
// header changes, redirects to another memento, changed bodies, hangs
// (timeouts), extra HTML (extra resources, live-web leaks), links through
// the alias host name, and what the fixity study's guidelines 5-7 warn
// about: an id_ endpoint that serves rewritten content (RawRewritten), an
// answer from an archive-side cache that ignores Cache-Control: no-cache
// (Cached) and a soft 404, a 200 "not archived" page (SoftNotFound).
package testarchive
