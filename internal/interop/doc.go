// Package interop holds no code, only tests: they prove with third-party
// tools that the WARC and CDXJ files Wayside writes are usable as written.
// See the tests' doc comments for what each checks.
package interop
