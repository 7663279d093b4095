// Package warcgen generates WARC and ARC test files in every layout a
// reader meets — uncompressed, one gzip member per record, gzip members
// holding several records, the whole file one gzip stream — with random
// damage (bad header, declared length long or short, garbage after a
// record, a damaged gzip member, a cut end), and says what a correct
// reading finds: every record written, which ones no damage touched, and
// where each lies in the stored file and in the uncompressed data.
//
// warcio's accounting property test reads these files with the reader;
// cmd/wayside's runs every reading command over them. The records' keys
// are in package framescan's Record.Key form.
package warcgen
