package crawlcolly

import (
	"github.com/gocolly/colly/v2"

	"github.com/wayside-archive/wayside/crawl"
)

// Attach makes collector c record everything it fetches through rec:
//
//	s, err := crawl.Open(crawl.Config{WARCDir: "warcs"})
//	if err != nil { return err }
//	defer s.Close()
//	crawlcolly.Attach(c, s.Recorder)
//
// Recording happens at the transport (c.WithTransport(rec)), never from
// colly's Response, whose Body is decoded (gunzipped, charset-converted) and
// silently cut at MaxBodySize: the WARC records carry the bytes as sent and
// received. Attach also sets c.ParseHTTPErrorResponse so that 304 (a
// server-not-modified revisit when conditional requests are on), 404 and
// other non-2xx responses — all recorded — reach OnResponse instead of only
// OnError. Redirect hops are recorded too, even though colly only shows the
// final response. Bodies handed to colly keep their Content-Encoding, which
// colly decodes itself for gzip.
func Attach(c *colly.Collector, rec *crawl.Recorder) {
	c.WithTransport(rec)
	c.ParseHTTPErrorResponse = true
}
