package crawlcolly_test

import (
	"fmt"

	"github.com/gocolly/colly/v2"

	"github.com/wayside-archive/wayside/crawl"
	"github.com/wayside-archive/wayside/crawl/crawlcolly"
)

// Adding Wayside to an existing colly collector: everything it fetches is
// recorded into WARC files in ./warcs with crawl-time deduplication.
func ExampleAttach() {
	c := colly.NewCollector()

	s, err := crawl.Open(crawl.Config{WARCDir: "warcs"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	crawlcolly.Attach(c, s.Recorder)

	c.OnHTML("a[href]", func(e *colly.HTMLElement) { e.Request.Visit(e.Attr("href")) })
	c.Visit("https://example.org/")
}
