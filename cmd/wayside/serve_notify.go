package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/wayside-archive/wayside/sidecar"
)

// onSIGHUP calls reload on every SIGHUP until ctx ends or the returned
// stop is called.
func onSIGHUP(ctx context.Context, reload func()) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-ch:
				reload()
			case <-ctx.Done():
				return
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(ch); close(done); <-finished }
}

// notifyReady implements systemd's readiness protocol (Type=notify)
// without a library: when $NOTIFY_SOCKET names a datagram socket, it sends
// "READY=1" once the daemon listens and ingests, and "STOPPING=1" when it
// begins to stop (see sd_notify(3)). Without $NOTIFY_SOCKET it does
// nothing.
func notifyReady(ctx context.Context, e *env, srv *sidecar.Server, log *slog.Logger) (stop func()) {
	sock := e.getenv("NOTIFY_SOCKET")
	if sock == "" {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-srv.Ready():
		case <-done:
			return
		case <-ctx.Done():
			return
		}
		if err := sdNotify(sock, fmt.Sprintf("READY=1\nSTATUS=serving\nMAINPID=%d", os.Getpid())); err != nil {
			log.Warn("serve: systemd readiness notification failed", "socket", sock, "err", err)
		}
		select {
		case <-done:
		case <-ctx.Done():
		}
		_ = sdNotify(sock, "STOPPING=1")
	}()
	return func() { close(done); <-finished }
}

// sdNotify sends one notification datagram to the socket at addr ("@"
// first: an abstract socket).
func sdNotify(addr, msg string) error {
	if strings.HasPrefix(addr, "@") {
		addr = "\x00" + addr[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(msg))
	return err
}
