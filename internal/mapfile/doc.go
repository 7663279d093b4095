// Package mapfile maps whole files read-only into memory for the readers
// that scan large files from end to end (the gzip members of a WARC file
// inflated straight from the mapping, input and output compared without
// copying), keeps their resident size bounded by releasing the pages
// already read, and turns the fault a mapping raises when its file is
// truncated underneath it (SIGBUS) into an error instead of a crash.
// Readers of one file in one process can share one mapping, each with a
// handle of its own (Share), so that its pages are faulted in and
// released once rather than once per reader; a page is released when
// every open handle has read past it.
package mapfile
