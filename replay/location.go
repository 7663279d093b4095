package replay

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/warcio"
)

// A capture's file is a base name, found in Options.WARCDirs, or the
// location URL the capture index stores for captures loaded from index
// lines (file:///DIR/NAME.warc.gz).

// isLocationURL reports whether file is a location URL rather than a
// base name.
func isLocationURL(file string) bool { return strings.Contains(file, "://") }

// openWARC opens the WARC file a capture names.
func (h *Handler) openWARC(file string) (*os.File, error) {
	if !isLocationURL(file) {
		return warcio.FindFile(h.opts.WARCDirs, file)
	}
	u, err := url.Parse(file)
	if err != nil {
		return nil, fmt.Errorf("replay: WARC location %q: %w", file, err)
	}
	if u.Scheme != "file" {
		return nil, fmt.Errorf("replay: WARC location %s: %s locations are not read here", u.Redacted(), u.Scheme)
	}
	return os.Open(u.Path)
}

// fileName is the name a CDX answer gives a capture's file: its base
// name, as for captures the daemon indexed itself (pywb's filename,
// relative to the archive's paths).
func fileName(file string) string { return dedupindex.FileBase(file) }
