package crawl_test

import (
	"fmt"
	"net/http"

	"github.com/gocolly/colly/v2"

	"github.com/wayside-archive/wayside/crawl"
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
	crawl.Attach(c, s.Recorder)

	c.OnHTML("a[href]", func(e *colly.HTMLElement) { e.Request.Visit(e.Attr("href")) })
	c.Visit("https://example.org/")
}

// Any Go HTTP client records through the Recorder.
func ExampleRecorder() {
	s, err := crawl.Open(crawl.Config{WARCDir: "warcs", Recorder: crawl.Options{Conditional: true}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	client := &http.Client{Transport: s.Recorder}
	resp, err := client.Get("https://example.org/")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
}
