package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/crawl/sitetest"
)

// TestCrawlInterruptExits130 runs the real binary on a site with a slow
// resource, sends SIGINT (Ctrl-C) once records are on disk and checks the
// convention: exit status 130, "interrupted" on stderr, the WARC files
// closed (no .open file), every record in them readable, and beside each
// the CDXJ file that indexes it.
func TestCrawlInterruptExits130(t *testing.T) {
	bin := waysideBinary(t)
	site := sitetest.New()
	site.Add(&sitetest.Resource{Path: "/media/talk.bin", ContentType: "application/octet-stream", Body: sitetest.Blob(1, 64<<10), Slow: time.Minute})
	srv, err := sitetest.Start(site)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "crawl", "--warc-dir", dir, "--delay", "0", "--parallel", "2", "-q", srv.URL+"/")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Wait (bounded) until the crawl has written records, then interrupt.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if m, _ := filepath.Glob(filepath.Join(dir, "*.open")); len(m) > 0 {
			if fi, err := os.Stat(m[0]); err == nil && fi.Size() > 4096 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no WARC records within 2 minutes; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute): // only catches a hang
		t.Fatalf("the crawl did not stop within 2 minutes of SIGINT; stderr:\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit: %v, want status 130; stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted; files closed cleanly") {
		t.Errorf("stderr does not say the crawl was interrupted and its files closed:\n%s", stderr.String())
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.open")); len(m) != 0 {
		t.Errorf("files left open after Ctrl-C: %v", m)
	}
	warcs, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(warcs) == 0 {
		t.Fatal("no WARC file after the interrupted crawl")
	}
	for _, w := range warcs {
		// Every record reads (wayside cdxj exits 1 on any unreadable one),
		// and the CDXJ beside the WARC is exactly its index.
		index, err := exec.Command(bin, "cdxj", "-q", w).Output()
		if err != nil {
			t.Errorf("wayside cdxj %s after Ctrl-C: %v", w, err)
		}
		beside, err := os.ReadFile(cdxj.SideFileName(w))
		if err != nil || !bytes.Equal(beside, index) || len(index) == 0 {
			t.Errorf("the CDXJ beside %s (%v) is not its index:\n%s\nwant:\n%s", w, err, beside, index)
		}
	}
}

// TestServeSIGTERMDuringCatchUpExits0: `wayside serve` told to stop by
// SIGTERM while its consumers were still catching up from the CDXJ files
// at start-up exited 130, as if interrupted, though a SIGTERM is how a
// daemon is stopped. The catch-up is held by a failpoint
// (consumers.catch-up=hold, which says on stderr when it holds), SIGTERM
// is sent then, and the daemon exits 0, says in its log that the
// consumers catch up at the next start, and prints no error or
// "interrupted" line.
func TestServeSIGTERMDuringCatchUpExits0(t *testing.T) {
	data, err := os.MkdirTemp("", "wsd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(data)
	warcs := t.TempDir()
	args, _ := json.Marshal([]string{"serve", "--data-dir", data, "--unix", filepath.Join(data, "s.sock"), "--watch", warcs})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), cliChildEnv+"="+string(args), failpointsEnv+"=consumers.catch-up=hold")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hang := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() }) // only catches a hang
	defer hang.Stop()
	held := make(chan struct{})
	var log strings.Builder
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "failpoint: consumers.catch-up: holding until cancelled") {
				close(held)
			}
		}
	}()
	select {
	case <-held:
	case <-logDone:
		cmd.Wait()
		t.Fatalf("the daemon ended before its catch-up was held:\n%s", log.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-logDone
	err = cmd.Wait()
	out := log.String()
	if err != nil {
		t.Fatalf("exit after SIGTERM during catch-up: %v, want status 0; stderr:\n%s", err, out)
	}
	if !strings.Contains(out, "stopped before the consumers caught up from the CDXJ files; they catch up at the next start") ||
		!strings.Contains(out, "sidecar: stopped") {
		t.Errorf("the log does not say the daemon stopped cleanly before the catch-up:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "wayside:") || strings.Contains(l, "level=ERROR") {
			t.Errorf("error line after an orderly stop: %s", l)
		}
	}
}
