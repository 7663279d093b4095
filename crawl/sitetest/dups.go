package sitetest

import (
	"bytes"
	"fmt"
	"time"
)

// NewDuplicates returns a site for crawler fleets: sections /s0/ … with a
// root page each linking pages /sS/I.bin, and payload (S*pages+I) %
// distinct served at page I of section S, so every payload repeats at
// other URLs of its section and of other sections (cross-URL
// duplicates). Payloads are size incompressible bytes under three MIME
// types; every page takes slow to send.
func NewDuplicates(sections, pages, distinct, size int, slow time.Duration) *Site {
	mimes := []string{"image/png", "application/pdf", "text/plain"}
	s := &Site{modTime: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)}
	for sec := range sections {
		var root bytes.Buffer
		root.WriteString("<!DOCTYPE html><html><head><title>Section</title></head><body>\n")
		var links []string
		for i := range pages {
			p := (sec*pages + i) % distinct
			r := &Resource{Path: fmt.Sprintf("/s%d/%d.bin", sec, i), ContentType: mimes[p%len(mimes)],
				Body: Blob(uint64(p)+1000, size), Slow: slow}
			links = append(links, r.Path)
			fmt.Fprintf(&root, "<a href=\"%s\">%d</a>\n", r.Path, i)
			s.Resources = append(s.Resources, r)
		}
		root.WriteString("</body></html>\n")
		s.Resources = append(s.Resources, &Resource{Path: fmt.Sprintf("/s%d/", sec), ContentType: "text/html; charset=utf-8",
			Body: root.Bytes(), Links: links})
	}
	s.index()
	return s
}
