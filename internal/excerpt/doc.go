// Package excerpt quotes input inside error messages: a bounded, printable
// excerpt that names what the input held, never raw binary bytes dumped
// into a terminal or a log. warcio (record and header lines), ukvs (keys
// and lines of maps) and every other reader that shows its input in an
// error use Quote.
package excerpt
