// Package examples holds small programs that show Wayside embedded in
// crawlers and beside them. Each lives in its own directory; CI builds them
// all.
package examples
