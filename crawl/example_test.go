package crawl_test

import (
	"fmt"
	"net/http"

	"github.com/wayside-archive/wayside/crawl"
)

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
