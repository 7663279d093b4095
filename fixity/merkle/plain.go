package merkle

import "crypto/sha256"

// PlainRoot returns the root of the plain binary Merkle tree that package
// fixity uses to reproduce the study's Algorithm 1 (see the package doc):
// nodes are the given hashes, in the order given; each level pairs them left
// to right, a pair becomes SHA-256(left || right) over the raw 32-byte
// digests, and an odd last node is promoted unchanged to the next level. One
// node is its own root; no nodes give SHA-256 of the empty string.
//
// This tree has neither leaf/node domain separation nor protection against
// the CVE-2012-2459 class of second preimages; it exists only so that roots
// can be compared with the study's. Use Root for anything that must resist
// an adversary.
func PlainRoot(nodes []Hash) Hash {
	if len(nodes) == 0 {
		return sha256.Sum256(nil)
	}
	level := append([]Hash(nil), nodes...)
	for len(level) > 1 {
		next := level[:0:0]
		for i := 0; i < len(level); i += 2 {
			if i+1 == len(level) {
				next = append(next, level[i])
				continue
			}
			var buf [2 * sha256.Size]byte
			copy(buf[:], level[i][:])
			copy(buf[sha256.Size:], level[i+1][:])
			next = append(next, sha256.Sum256(buf[:]))
		}
		level = next
	}
	return level[0]
}

// PlainLeaf returns SHA-256(data): how Algorithm 1 turns a piece of data (a
// header line) into a node of a plain tree.
func PlainLeaf(data []byte) Hash { return sha256.Sum256(data) }
