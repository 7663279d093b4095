// Command benchsite serves sitetest's large benchmark site on a loopback
// port until interrupted; scripts/bench-crawl.sh crawls it with wayside.
//
//	go run ./crawl/sitetest/benchsite -pages 400 -size 262144
//
// It prints the site's URL on the first line of stdout.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/wayside-archive/wayside/crawl/sitetest"
)

func main() {
	pages := flag.Int("pages", 400, "number of resources")
	size := flag.Int("size", 256<<10, "bytes per resource")
	flag.Parse()
	srv, err := sitetest.Start(sitetest.NewLarge(*pages, *size))
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchsite:", err)
		os.Exit(1)
	}
	fmt.Println(srv.URL + "/")
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	<-ch
	srv.Close()
}
