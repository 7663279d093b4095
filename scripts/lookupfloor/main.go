// Command lookupfloor is benchmark tooling for scripts/bench-sidecar.sh, not
// part of the product:
//
//	lookupfloor -from DAEMON.sock -listen FLOOR.sock
//
// It is the floor of a digest lookup over a Unix socket: a bare net/http
// handler that answers every GET with a fixed answer, copied byte for byte
// (the Link, Content-Type, X-Content-Type-Options headers and the body)
// from a hit and a miss of the running daemon at -from (loadgen's seed
// digests), alternately. It serves with the daemon's HTTP server limits
// (read header, read and idle timeouts, header size, connection cap), so
// `wayside status -addr FLOOR.sock bench` measures what net/http, the
// socket and the load generator cost on this machine at this moment with
// no index, routing, metrics or encoding; the daemon's rate divided by
// this one is the figure the script reports. It runs until SIGINT or
// SIGTERM.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"syscall"

	"golang.org/x/net/netutil"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/client"
	"github.com/wayside-archive/wayside/sidecar"
	"github.com/wayside-archive/wayside/sidecar/loadgen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// WAYSIDE_CPUPROFILE=FILE writes a CPU profile of the run, as the
	// daemon does (bench-sidecar.sh PROFILE=FILE: FILE.floor).
	if p := os.Getenv("WAYSIDE_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "lookupfloor:", err)
			os.Exit(1)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "lookupfloor:", err)
		os.Exit(1)
	}
}

// answer is one recorded answer of the daemon.
type answer struct {
	hdr  http.Header
	body []byte
}

func record(ctx context.Context, c *client.Client, dig string) (answer, error) {
	resp, err := c.Raw(ctx, api.PathLookup+"?digest="+dig)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	h := http.Header{}
	for _, k := range []string{"Link", "Content-Type", "X-Content-Type-Options"} {
		if v, ok := resp.Header[k]; ok {
			h[k] = v
		}
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	return answer{hdr: h, body: body}, nil
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("lookupfloor", flag.ContinueOnError)
	from := fs.String("from", "", "socket of the running daemon whose answers are copied")
	listen := fs.String("listen", "", "Unix socket to serve on (created; must not exist)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from == "" || *listen == "" || fs.NArg() > 0 {
		return errors.New("usage: lookupfloor -from DAEMON.sock -listen FLOOR.sock")
	}
	c, err := client.New(*from)
	if err != nil {
		return err
	}
	hit, err := record(ctx, c, loadgen.SeedDigest(0))
	if err == nil && !bytes.Contains(hit.body, []byte(`"found":true`)) {
		err = fmt.Errorf("the daemon at %s does not hold loadgen's seed digests (seed it first)", *from)
	}
	var miss answer
	if err == nil {
		miss, err = record(ctx, c, loadgen.SeedDigest(1<<40))
	}
	c.Close()
	if err != nil {
		return err
	}
	answers := [2]answer{hit, miss}
	var n atomic.Uint64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := &answers[n.Add(1)&1]
		wh := w.Header()
		for k, v := range a.hdr {
			wh[k] = v
		}
		w.Write(a.body)
	})
	var cfg sidecar.Config
	cfg.Defaults()
	lim := cfg.Limits
	l, err := net.Listen("unix", *listen)
	if err != nil {
		return err
	}
	defer os.Remove(*listen)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: lim.ReadHeaderTimeout, ReadTimeout: lim.ReadTimeout,
		IdleTimeout: lim.IdleTimeout, MaxHeaderBytes: 64 << 10}
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(netutil.LimitListener(l, lim.MaxConns)); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
