package main

import "fmt"

// tolerateFlag adds --tolerate-damage to a command that reads WARC/ARC
// files: by default a damaged input (records that cannot be read, bytes
// that are no record: warcio reports each by file and offset) makes the
// command exit 1; with the flag it exits 0 once the rest is done, the
// damage still listed and named in the summary.
func tolerateFlag(fs *flagSet) *bool {
	return fs.Bool("tolerate-damage", false, "exit 0 when the only problem is damaged input (unreadable records, bytes that are no record: still listed, and counted in the summary)")
}

// tolerated returns err, the failure a command reports for damaged input
// only, or with tolerate nil after naming it on stderr.
func tolerated(e *env, tolerate bool, err error) error {
	if err == nil || !tolerate {
		return err
	}
	fmt.Fprintf(e.stderr, "wayside: tolerated (--tolerate-damage): %s\n", oneLine(err.Error()))
	return nil
}
