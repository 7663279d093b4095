package dedupindex

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/wayside-archive/wayside/cdxj"
)

// TEMPORARY until cdxj.ParseCDX lands.
func parseCDXLine(s, layout string) (cdxj.Line, error) {
	f := strings.Fields(s)
	l := cdxj.Line{Length: -1, Offset: -1}
	switch len(f) {
	case 11:
		l.Key, l.Timestamp, l.URL, l.MIME, l.Digest, l.Filename = f[0], f[1], f[2], f[3], f[5], f[10]
		l.Status, _ = strconv.Atoi(f[4])
		l.Length, _ = strconv.ParseInt(f[8], 10, 64)
		l.Offset, _ = strconv.ParseInt(f[9], 10, 64)
	case 9:
		l.Key, l.Timestamp, l.URL, l.MIME, l.Digest, l.Filename = f[0], f[1], f[2], f[3], f[5], f[8]
		l.Status, _ = strconv.Atoi(f[4])
		l.Offset, _ = strconv.ParseInt(f[7], 10, 64)
	default:
		return l, fmt.Errorf("%w: %d fields", cdxj.ErrSyntax, len(f))
	}
	return l, nil
}
