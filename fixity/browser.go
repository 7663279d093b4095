package fixity

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// browserNames are the Chromium-like binaries looked for on PATH.
var browserNames = []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"}

// findChromium returns the first Chromium-like binary on PATH.
func findChromium() string {
	for _, n := range browserNames {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return "/usr/bin/chromium"
}

// FindBrowser returns the browser a Replayer with ExecPath path would run:
// path itself when set, else the first Chromium-like binary on PATH. The
// error says what is missing, so a daemon can report at start-up that its
// sweeps cannot run.
func FindBrowser(path string) (string, error) {
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("fixity: browser %s: %w", path, err)
		}
		return p, nil
	}
	for _, n := range browserNames {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("fixity: no browser: none of %s is on PATH (install chromium)", strings.Join(browserNames, ", "))
}

// allocatorOptions are the browser flags: headless, no sandbox (runs as
// root in containers), no GPU, no background traffic, no component updates,
// no first-run, no sync, site isolation off so every frame's requests reach
// the page's network and fetch interception. All traffic goes through the
// scope proxy at proxy (loopback included); proxy "" gives a browser
// without it, for benchmarks of a bare load. As one more layer, the
// browser's host resolver resolves nothing but the archive host names.
func (r *Replayer) allocatorOptions(proxy string) []chromedp.ExecAllocatorOption {
	rules := []string{"MAP * ~NOTFOUND"}
	seen := map[string]bool{}
	for _, a := range r.cfg.Archives {
		for _, h := range a.Hosts {
			if host, _, err := net.SplitHostPort(h); err == nil {
				h = host
			}
			if !seen[h] {
				seen[h] = true
				rules = append(rules, "EXCLUDE "+strings.Trim(h, "[]"))
			}
		}
	}
	proxyFlags := []chromedp.ExecAllocatorOption{chromedp.Flag("no-proxy-server", true)}
	if proxy != "" {
		proxyFlags = []chromedp.ExecAllocatorOption{
			chromedp.Flag("proxy-server", "http://"+proxy),
			chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		}
	}
	return append(proxyFlags,
		chromedp.Flag("host-resolver-rules", strings.Join(rules, ", ")),
		chromedp.ExecPath(r.opts.ExecPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("disable-client-side-phishing-detection", true),
		chromedp.Flag("safebrowsing-disable-auto-update", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("use-mock-keychain", true),
		chromedp.Flag("disable-features", "SitePerProcess,IsolateOrigins,Translate,OptimizationHints,MediaRouter,InterestFeedContentSuggestions"),
		chromedp.Flag("disable-site-isolation-trials", true),
	)
}

// startBrowser launches a browser and returns its root chromedp context.
func (r *Replayer) startBrowser() (context.Context, context.CancelFunc, error) {
	proxy, err := r.scopeProxy()
	if err != nil {
		return nil, nil, err
	}
	// The browser's own temporary files (its singleton socket directory,
	// left behind when it is killed) go to a directory removed with it.
	tmp, err := os.MkdirTemp("", "wayside-chromium-")
	if err != nil {
		return nil, nil, fmt.Errorf("fixity: start browser: %w", err)
	}
	opts := append(r.allocatorOptions(proxy), chromedp.Env("TMPDIR="+tmp))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	cancel := func() { bcancel(); acancel(); os.RemoveAll(tmp) }
	if err := chromedp.Do(bctx); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("fixity: start browser %s: %w", r.opts.ExecPath, err)
	}
	v, err := chromedp.CallBrowser(bctx, browser.GetVersion, cdp.Empty{})
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("fixity: browser version: %w", err)
	}
	r.mu.Lock()
	r.version, r.ua = v.Product, v.UserAgent
	r.mu.Unlock()
	return bctx, cancel, nil
}

// shared returns the shared browser, starting or restarting it (after a
// crash) as needed.
func (r *Replayer) shared() (context.Context, error) {
	r.mu.Lock()
	if r.bctx != nil && r.bctx.Err() == nil {
		b := r.bctx
		r.mu.Unlock()
		return b, nil
	}
	if r.bcancel != nil {
		r.bcancel()
		r.bctx, r.bcancel = nil, nil
	}
	r.mu.Unlock()
	bctx, cancel, err := r.startBrowser()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bctx != nil && r.bctx.Err() == nil { // another goroutine won
		cancel()
		return r.bctx, nil
	}
	r.bctx, r.bcancel = bctx, cancel
	return bctx, nil
}

// BrowserVersion returns the product string of the browser, once started.
func (r *Replayer) BrowserVersion() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.version
}

// Close stops the browser.
func (r *Replayer) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bcancel != nil {
		r.bcancel()
		r.bctx, r.bcancel = nil, nil
	}
	if t, ok := r.client.Transport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
	if r.proxy != nil {
		r.proxy.close()
		r.proxy = nil
	}
	return nil
}

// scopeProxy returns the address of the scope proxy, starting it once.
func (r *Replayer) scopeProxy() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proxy == nil {
		p, err := startScopeProxy(r.cfg, r.log)
		if err != nil {
			return "", err
		}
		r.proxy = p
	}
	return r.proxy.addr(), nil
}

// BlockedByProxy returns how many browser requests the scope proxy refused
// (requests that escaped the per-page interception, e.g. from workers).
func (r *Replayer) BlockedByProxy() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proxy == nil {
		return 0
	}
	return r.proxy.blocked.Load()
}
