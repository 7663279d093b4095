// Package fixity checks that archived web pages replay the same over time.
//
// It replays composite mementos in headless Chromium, hashes them into a
// Merkle root, writes a manifest per replay, classifies changes between
// replays and runs scheduled sweeps.
package fixity
