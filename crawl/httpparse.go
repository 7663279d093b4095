package crawl

import (
	"bytes"
	"net/http"

	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/warcio"
)

// httpResponse is a recorded HTTP response, parsed.
type httpResponse struct {
	status  int
	header  http.Header
	headLen int    // bytes of status line and headers, blank line included
	payload []byte // entity body, transfer-coding removed, content-coding kept
	digest  string // canonical SHA-1 of payload
}

// parseResponse parses raw response bytes as recorded, with warcio's
// parser — the same code that computes payload digests when WARC files are
// read back, so writer and readers agree (the body is everything after the
// head, de-chunked when chunked; a HEAD or 304 response recorded without
// body has an empty payload).
func parseResponse(raw []byte) (*httpResponse, error) {
	var payload bytes.Buffer
	payload.Grow(len(raw))
	info, err := warcio.ParseHTTP(bytes.NewReader(raw), &payload)
	if err != nil {
		return nil, err
	}
	if !info.IsResponse() {
		return nil, errNotResponse
	}
	h := make(http.Header, len(info.Header))
	for _, f := range info.Header {
		h.Add(f.Name, f.Value)
	}
	return &httpResponse{status: info.Status, header: h, headLen: int(info.HeadLength),
		payload: payload.Bytes(), digest: info.PayloadDigest}, nil
}

type parseError string

func (e parseError) Error() string { return string(e) }

const errNotResponse = parseError("not an HTTP response")

func digestString(b []byte) string { return digest.Of(digest.SHA1, b).String() }
