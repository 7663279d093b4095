package crawl

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"

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
	info, err := warcio.ParseHTTP(bytes.NewReader(raw), nil)
	if err != nil {
		return nil, err
	}
	if !info.IsResponse() {
		return nil, errNotResponse
	}
	var payload []byte
	if info.Chunked {
		var b bytes.Buffer
		b.Grow(len(raw) - int(info.HeadLength))
		if _, err := warcio.ParseHTTP(bytes.NewReader(raw), &b); err != nil {
			return nil, err
		}
		payload = b.Bytes()
	} else {
		// Without transfer coding the payload is the rest of the message.
		payload = raw[info.HeadLength:]
	}
	if int64(len(payload)) != info.PayloadLength {
		return nil, fmt.Errorf("payload of %d bytes, parser counted %d", len(payload), info.PayloadLength)
	}
	h := make(http.Header, len(info.Header))
	for _, f := range info.Header {
		h.Add(f.Name, f.Value)
	}
	return &httpResponse{status: info.Status, header: h, headLen: int(info.HeadLength),
		payload: payload, digest: info.PayloadDigest}, nil
}

type parseError string

func (e parseError) Error() string { return string(e) }

const errNotResponse = parseError("not an HTTP response")

func digestString(b []byte) string { return digest.Of(digest.SHA1, b).String() }

// mimeOf returns the media type of a Content-Type value without parameters,
// lower case.
func mimeOf(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.ToLower(strings.TrimSpace(ct))
}

// precompressed reports whether a response's entity is compressed data
// already: it has a content coding (gzip, br, zstd, deflate...) or its
// media type is a compressed format (JPEG, PNG, GIF, WebP, AVIF, WOFF,
// audio and video, archives). Deflating such an entity again costs most
// of the time of writing its record and saves a fraction of a percent, so
// its record stores it as it is (warcio.Draft.IncompressibleFrom).
func precompressed(h http.Header) bool {
	if ce := strings.ToLower(strings.TrimSpace(h.Get("Content-Encoding"))); ce != "" && ce != "identity" {
		return true
	}
	mt := mimeOf(h.Get("Content-Type"))
	switch {
	case strings.HasPrefix(mt, "video/"):
		return true
	case strings.HasPrefix(mt, "audio/"):
		return mt != "audio/wav" && mt != "audio/x-wav" && mt != "audio/wave" && mt != "audio/midi"
	}
	switch mt {
	case "image/jpeg", "image/pjpeg", "image/png", "image/apng", "image/gif", "image/webp", "image/avif", "image/heic", "image/heif", "image/jxl",
		"font/woff", "font/woff2", "application/font-woff", "application/font-woff2",
		"application/zip", "application/gzip", "application/x-gzip", "application/x-bzip2", "application/x-xz", "application/zstd",
		"application/x-7z-compressed", "application/vnd.rar", "application/x-rar-compressed", "application/ogg":
		return true
	}
	return false
}
