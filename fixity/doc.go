// Package fixity checks that archived web pages replay the same over time.
//
// It replays composite mementos in headless Chromium (Replayer), hashes them
// into a Merkle root, writes a manifest per replay (Manifest), classifies
// changes between replays (Compare), and runs sweeps over lists of URI-Ms
// into a durable history (Sweeper, History) that reports summarise
// (BuildReport). The construction follows Aturban et al., "Hashes are not
// suitable to verify fixity of the public archived web" (PLoS One, 2023),
// Algorithm 1, hardened as described below.
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
// # Changes
//
// Compare pairs the included resources of two manifests by key and returns
// the first class that any pair shows, in the study's order: Set (resources
// added or removed), Status, URI-M/Header (entity unchanged), Representation
// (entity changed at the same URI-M), URI-M+Representation (another memento
// with another entity), Timeout (no response on one side). The entity is the
// raw body hash when there is one, else the rewritten one. A replay with a
// 5xx, a timeout or a failed main document is transient: the Sweeper retries
// it and never compares it. A memento may have several accepted roots
// (JavaScript randomness): a new root equal to an accepted one is not a
// change. The first comparable root is accepted as baseline, and a root seen
// SweeperOptions.AcceptAfter times joins the set.
package fixity
