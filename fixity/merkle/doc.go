// Package merkle implements the RFC 9162 (Certificate Transparency v2) Merkle
// tree hash that package fixity builds its roots with, and the typed,
// length-prefixed leaf encoding fixity hashes.
//
// Tree hash (RFC 9162 section 2.1.1), with SHA-256:
//
//	MTH({})       = SHA-256()
//	MTH({d0})     = SHA-256(0x00 || d0)
//	MTH(D[0:n])   = SHA-256(0x01 || MTH(D[0:k]) || MTH(D[k:n]))
//	                where k is the largest power of two smaller than n
//
// An odd last leaf is never duplicated, so two different leaf lists cannot
// give the same root (the CVE-2012-2459 class of collisions), and leaves can
// never be confused with interior nodes because of the 0x00/0x01 prefixes.
//
// PlainRoot is a second, deliberately weaker tree: the plain pairwise tree
// (SHA-256(left || right), odd last node promoted, no prefixes) that package
// fixity uses only to reproduce the fixity study's Algorithm 1 roots.
//
// Leaf encoding (see Encode): one tag byte naming what the leaf holds,
// followed by each field as a 4-byte big-endian length and the field's
// bytes. Two leaves with different fields therefore never encode to the same
// bytes, whatever the fields hold.
package merkle
