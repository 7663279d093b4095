// Package indextest is the conformance suite for dedupindex.Index
// implementations. Every backend's tests call Run, so all backends agree on
// claim atomicity, first-original-wins, durability across reopen, scopes,
// same-URL keys, the by-URL index and the optional interfaces (Batcher,
// WindowClaimer, Checker).
package indextest
