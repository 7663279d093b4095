// Package fixity checks that archived web pages replay the same over time.
//
// It replays composite mementos in headless Chromium (Replayer), hashes them
// into a Merkle root, writes a manifest per replay (Manifest), classifies
// changes between replays (Compare), and runs sweeps over lists of URI-Ms
// into a durable history (Sweeper, History) that reports summarise
// (BuildReport). The construction follows Aturban et al., "Hashes are not
// suitable to verify fixity of the public archived web" (PLoS One, 2023),
// Algorithm 1, hardened as described below; the study's own Algorithm 1
// root is computed beside it. Replays can be kept as evidence WARCs.
//
// # Replay
//
// A URI-M is replayed only when it is an http(s) URL on a configured archive
// host (Config); file:, data:, other hosts and private-network addresses
// outside the list are refused with ErrOutOfScope. Each replay runs in a new
// incognito browser context of a shared headless browser (or, with
// ReplayOptions.FreshBrowser, a new browser process with a new temporary
// user-data-dir). Every request of the page is intercepted with the CDP
// Fetch domain: requests to hosts outside the archive list fail before they
// leave the browser and are recorded as live-web leakage. Behind that, the
// browser's only way out is a loopback forward proxy that forwards requests
// to archive hosts and refuses everything else (workers and service workers
// are not seen by the page's interception), and its host resolver resolves
// only archive host names. The page counts as
// loaded when no request is in flight and no network event has arrived for
// the quiet period, or at the hard cap (pending requests are then timeouts);
// the load event is not used. Bodies are fetched right after that, then the
// raw counterpart of every memento resource is fetched with the id_
// modifier by a plain HTTP client (same host scope, redirects followed hop
// by hop within scope).
//
// # What is hashed
//
// A resource is one request chain of the page (redirects followed), keyed by
// its canonical URI-R. It is excluded from the root, and recorded with the
// reason, when it is live-web (host not in the archive list), browser
// favicon, replay infrastructure (an archive-host URL that is not a URI-M,
// e.g. banners, replay scripts) or matched by an archive's Exclude rule.
//
// Canonical URI-M: "https://" + the archive's first host + the collection
// prefix + "/" + the timestamp digits (replay modifier such as id_, mp_,
// im_, js_, cs_ removed) + "/" + the canonical URI-R (lowercase scheme and
// host, default port and fragment removed, "http:/" repaired). So http and
// https, host aliases (archive.is/archive.today) and modifiers do not change
// a URI-M, but another timestamp does.
//
// Selected headers: Memento-Datetime, Content-Type, Location (resolved and
// canonicalised) and every X-Archive-Orig-*; names lowercased, values
// trimmed, one header per value.
//
// # Construction (anyone can recompute a root from a manifest)
//
// MTH is the RFC 9162 Merkle tree hash with SHA-256 (package merkle): leaf
// hash SHA-256(0x00 ‖ leaf), node hash SHA-256(0x01 ‖ left ‖ right), split
// at the largest power of two smaller than n, no duplication of an odd last
// leaf, MTH of no leaves = SHA-256(""). Every leaf is encoded as one tag byte
// followed by each field as a 4-byte big-endian length and its bytes
// (merkle.Encode). For each response (rewritten or raw) of a resource:
//
//	headers root  = MTH( Encode('H', name, value) for each selected header,
//	                     sorted by name, then value )
//	response root = MTH( Encode('S', status),            // "200", or "timeout"/"failed"/"blocked"
//	                     Encode('h', headers root),
//	                     Encode('B', SHA-256(body))      // body rule "hashed"
//	                       or Encode('N', body rule),    // "text-rewritten" or "none"
//	                     Encode('U', SHA-256(canonical final URI-M)),
//	                     Encode('L', hop status, canonical hop URL) for each redirect, in order )
//
// Rewritten bodies are hashed only for non-text media types; text (HTML,
// CSS, JavaScript, JSON, XML, SVG, unknown) is rewritten by archives and
// gets the rule "text-rewritten". Raw bodies are always hashed when the
// status is 2xx (not 204). Resources are sorted by key, then memento
// datetime, then rewritten root, then raw root. Then:
//
//	rewritten root = MTH( Encode('R', key, rewritten response root) for each included resource )
//	raw root       = MTH( Encode('R', key, raw response root) for each included resource with a raw response )
//	root           = MTH( Encode('C', "rewritten", rewritten root), Encode('C', "raw", raw root) )
//
// Manifest.Seal computes all of these from the recorded fields; Verify and
// Recompute redo it without a browser. PolicyVersion names this
// construction; Context.PolicyDigest also covers the archive configuration.
//
// # Algorithm 1 (the study's root, beside the hardened one)
//
// Manifest.Algorithm1 holds the root the study's Algorithm 1 gives, so that
// roots can be compared with the study's and the effect of the hardening
// seen (the report shows both). It is computed from the same recorded
// leaves (ComputeAlgorithm1) and checked by Verify. Four nested trees:
//
//	brown  = PT( SHA-256(line) for each line, lines sorted bytewise )
//	         lines: ":status: <status>" and "<name>: <value>" for each
//	         selected header (Header.Raw when set, else Header.Value)
//	blue   = PT( brown, SHA-256(R) if the body is hashed, SHA-256(URI-M) )
//	red    = PT( blue roots of one capture, ordered by URI-M, then blue root hex )
//	green  = PT( red of the rewritten capture, red of the raw capture )  = the root
//
// PT is the plain binary Merkle tree (merkle.PlainRoot): the nodes are the
// 32-byte values given, in order; each level pairs them left to right into
// SHA-256(left ‖ right); an odd last node moves up unchanged; one node is its
// own root; no nodes give SHA-256 of the empty string. SHA-256(R) is
// Response.BodyHash and the URI-M is the URL as loaded (Response.FinalURL,
// or Hop.URL for a redirect hop; Hop.URIM in format 1 manifests, which lack
// it), hashed as its UTF-8 bytes. Only included resources count, with the
// same exclusions as the hardened root; of a resource's response, every
// redirect hop is a resource of its own (status, its selected headers, no
// body, its URL), then the final answer; a response that never arrived
// (timeout, failure, blocked) contributes nothing.
//
// The paper gives the four trees and what goes into them but its authors'
// code is not public, and the text available to us (the article's abstract
// and figure captions; the details as summarised in the project notes) leaves
// these points open. Each is decided here as follows:
//
//  1. Tree construction (pairing, odd nodes, prefixes): a plain pairwise
//     tree with the odd last node promoted, no leaf/node prefixes, as common
//     Merkle libraries build it; the hardened root exists because this one
//     is open to CVE-2012-2459-style ambiguity.
//  2. Whether the inputs of the blue, red and green trees are hashed again
//     as leaves: no; they are already SHA-256 values and are used as the
//     tree's nodes. Only the header lines of the brown tree are hashed into
//     nodes.
//  3. Where the HTTP status (a component C of every resource) goes: the
//     blue tree names only three inputs, so the status is the first line of
//     the brown tree, as ":status: 200" (a name no header can have), i.e.
//     part of the response head.
//  4. Header line form: "name: value" with the lowercase name and the
//     trimmed value, one line per value, sorted bytewise. Location is
//     hashed as served (not resolved or canonicalised): the study hashed
//     what it downloaded.
//  5. The URI-M: as loaded, with the archive's host and scheme and the
//     replay modifier (im_, id_, ...) as they were, not canonicalised. This
//     is why archive host aliases, http/https moves and modifier changes
//     change this root and not the hardened one.
//  6. A body that is not hashed (a text body of the rewritten capture, a
//     non-2xx answer, no body): the SHA-256(R) node is left out rather than
//     replaced by a constant.
//  7. Redirects: the study's WARCs hold one record per HTTP response, so
//     each hop is a resource of its own.
//  8. Resource order in the red tree (the order downloads finished is not
//     reproducible): by URI-M as loaded, then blue root.
//  9. Which resources count: the hardened root's exclusions (live web,
//     replay infrastructure, favicon, archive rules, soft 404s), the study's
//     exclusion of non-memento and banner resources.
//  10. An empty capture (an archive without raw mementos): its red root is
//     SHA-256 of the empty string.
//
// # Evidence
//
// With WithEvidence (or a Sweeper with an evidence retention policy), a
// replay is kept as two WARC files written with package crawl's writer: the
// rewritten capture (a response record, and a request record, for every
// response the browser received, rebuilt from what the browser reports:
// decoded bodies, Content-Encoding/Transfer-Encoding dropped, Content-Length
// set) and the raw capture (the id_ fetches recorded wire-exact by package
// crawl's recording transport). The manifest lists both files with their
// SHA-256 digests and each response's record offset and length; no root
// covers them. DiffEvidence (wayside fixity compare --bytes) reads the
// records of a changed resource in two replays and shows the bytes that
// differ. A Sweeper keeps evidence per its Retention (keep-all, on-change,
// none) within SweeperOptions.EvidenceMaxBytes: the oldest evidence is
// evicted first, each eviction logged (KindEvict) before its files go, so
// History.Check can tell an evicted reference from a lost one.
//
// # Guidelines 5-7
//
// Every replay runs the study's guideline checks and records findings in
// Manifest.Checks (and the history record): 5, a raw (id_) answer that holds
// rewritten URI-Ms (CheckRawNotRaw); 6, an answer a cache gave although
// every request asked for a fresh one (CheckArchiveCache: Age, X-Cache-like
// HIT headers, the browser's cache or a service worker); 7, a 2xx answer
// whose type cannot be what was asked for, e.g. an HTML page for an image
// (CheckSoft404: the resource is excluded from both roots) and rewritten
// and raw statuses that disagree (CheckStatusMismatch). Compare lists the
// findings of both replays; the report counts them per archive.
//
// # Changes
//
// Compare pairs the included resources of two manifests by key and returns
// the first class that any pair shows, in the study's order: Set (resources
// added or removed), Status, URI-M (another URI-M or redirect chain, entity
// unchanged), Header (only selected headers differ), Representation (entity
// changed at the same URI-M), URI-M+Representation (another memento with
// another entity), Timeout (no response on one side). The entity is the
// raw body hash when there is one, else the rewritten one. Wayside adds
// Other (roots differ but no included resource does) and the outcomes that
// are not changes: None, Accepted, Transient and Refused; histories written
// before URI-M and Header were split hold "urim-header", still counted as a
// change. A replay with a 5xx, a timeout or a failed main document is
// transient: the Sweeper retries it and never compares it. A memento may
// have several accepted roots (JavaScript randomness): a new root equal to
// an accepted one is not a change. The first comparable root is accepted as
// baseline, and a root seen SweeperOptions.AcceptAfter times joins the set.
//
// # Report
//
// BuildReport aggregates a history: the share of changed mementos per
// archive and sweep (heatmap), records per class, and per archive the
// study's Table 5 (mementos with one hash, several, a different one every
// download), Fig 20 (histogram of distinct hashes per memento), Fig 21 (its
// cumulative share) and Figs 27-28 (mementos with a new hash per download),
// each for the hardened root, the Algorithm 1 root and an entity-only hash
// (EntityRoot), the latter two derived from the stored manifests
// (WithManifests). Report.WriteHTML draws them as inline SVG, without
// scripts or external resources; WriteJSON writes the same data.
package fixity
