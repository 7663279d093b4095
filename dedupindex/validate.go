package dedupindex

import (
	"fmt"
	"time"

	"github.com/wayside-archive/wayside/digest"
)

// minDate and maxDate bound the dates an index accepts (WARC dates of real
// captures; backends store dates as int64 nanoseconds).
var (
	minDate = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxDate = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)
)

// CheckOriginal validates o as the original for k and returns it in the
// form backends store: Digest canonical (filled in from k when empty) and
// Date in UTC. Backends call it in Commit, Put and PutBatch so that no entry
// is stored that a revisit could not point at.
func CheckOriginal(k Key, o Original) (Original, error) {
	kd, err := digest.Normalize(k.Digest)
	if err != nil {
		return Original{}, fmt.Errorf("dedupindex: key digest: %w", err)
	}
	if o.Digest == "" {
		o.Digest = kd
	} else {
		od, err := digest.Normalize(o.Digest)
		if err != nil {
			return Original{}, fmt.Errorf("dedupindex: original digest: %w", err)
		}
		if od != kd {
			return Original{}, fmt.Errorf("dedupindex: original digest %s does not match key digest %s", od, kd)
		}
		o.Digest = od
	}
	switch {
	case o.TargetURI == "":
		return Original{}, fmt.Errorf("dedupindex: original %s has no target URI", o.Digest)
	case o.Date.IsZero():
		return Original{}, fmt.Errorf("dedupindex: original %s of %s has no date", o.Digest, o.TargetURI)
	case o.Date.Before(minDate) || !o.Date.Before(maxDate):
		return Original{}, fmt.Errorf("dedupindex: original %s of %s has out-of-range date %s", o.Digest, o.TargetURI, o.Date)
	case o.Offset < 0 || o.Length < 0 || o.PayloadLength < 0:
		return Original{}, fmt.Errorf("dedupindex: original %s of %s has a negative offset or length", o.Digest, o.TargetURI)
	case o.Status != 0 && (o.Status < 100 || o.Status > 999):
		return Original{}, fmt.Errorf("dedupindex: original %s of %s has invalid HTTP status %d", o.Digest, o.TargetURI, o.Status)
	}
	o.Date = o.Date.UTC()
	return o, nil
}
