// Command fixity-schedule starts a configured fixity sweep on a running
// sidecar now (besides its cron schedule), waits for it and prints the
// outcome per change class and where the HTML report is.
//
//	wayside serve -config examples/fixity-schedule/wayside.yaml &
//	go run ./examples/fixity-schedule -socket wayside-data/wayside.sock -sweep hourly-watchlist
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/wayside-archive/wayside/client"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fixity-schedule example:", err)
		os.Exit(1)
	}
}

func run() error {
	socket := flag.String("socket", "wayside-data/wayside.sock", "the sidecar's Unix socket")
	sweep := flag.String("sweep", "", "sweep to run now (default: list the sweeps)")
	timeout := flag.Duration("timeout", 30*time.Minute, "how long to wait for the sweep")
	flag.Parse()
	c, err := client.New(*socket, client.WithTimeout(*timeout))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if *sweep == "" {
		sweeps, err := c.FixitySweeps(ctx)
		if err != nil {
			return err
		}
		for _, s := range sweeps {
			fmt.Printf("%-24s schedule %-12q next %-20s %d URI-Ms running=%v\n", s.Name, s.Schedule, s.Next, s.URIMs, s.Running)
		}
		return nil
	}
	st, err := c.RunSweep(ctx, *sweep, true)
	if err != nil {
		return err
	}
	if st.LastRun == nil {
		return fmt.Errorf("sweep %s: no run recorded", *sweep)
	}
	fmt.Printf("sweep %s: %s → %s\n", st.Name, st.LastRun.Started, st.LastRun.Finished)
	var classes []string
	for k := range st.LastRun.Classes {
		classes = append(classes, k)
	}
	sort.Strings(classes)
	for _, k := range classes {
		fmt.Printf("  %-20s %d\n", k, st.LastRun.Classes[k])
	}
	if st.LastRun.Error != "" {
		fmt.Println("  error:", st.LastRun.Error)
	}
	fmt.Printf("HTML report: curl --unix-socket %s http://x%s\n", *socket, st.LastRun.Report)
	return nil
}
