package dedupindex

import wayside "github.com/wayside-archive/wayside"

// OriginalFromCapture returns the original a durably written response
// capture provides, for Commit or Put. Revisits are not originals: callers
// must not commit them.
func OriginalFromCapture(c wayside.Capture) Original {
	return Original{
		Digest:        c.Digest,
		TargetURI:     c.URI,
		Date:          c.Date,
		RecordID:      c.RecordID,
		File:          c.File,
		Offset:        c.Offset,
		Length:        c.Length,
		PayloadLength: c.PayloadLength,
		Status:        c.Status,
		MIME:          c.MIME,
		ETag:          c.ETag,
		LastModified:  c.LastModified,
	}
}
