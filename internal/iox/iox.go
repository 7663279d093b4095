package iox

import "io"

// CountWriter passes writes to W and counts the bytes W accepted in N.
// It is not safe for concurrent use.
type CountWriter struct {
	W io.Writer
	N int64
}

// Write implements io.Writer.
func (c *CountWriter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += int64(n)
	return n, err
}

// CountReader passes reads to R and counts the bytes read in N.
// It is not safe for concurrent use.
type CountReader struct {
	R io.Reader
	N int64
}

// Read implements io.Reader.
func (c *CountReader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	return n, err
}
