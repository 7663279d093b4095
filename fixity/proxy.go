package fixity

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// scopeProxy is the browser's only way out: an HTTP forward proxy on
// loopback that forwards requests to configured archive hosts and refuses
// everything else. Fetch interception already fails out-of-scope requests
// of the page and its frames and records them; the proxy also covers what
// that interception does not see (dedicated, shared and service workers,
// beacons after unload, preconnects), so the guarantee holds at the network
// level.
type scopeProxy struct {
	cfg     *Config
	log     *slog.Logger
	ln      net.Listener
	srv     *http.Server
	rp      *httputil.ReverseProxy
	tr      *http.Transport
	blocked atomic.Int64
	wg      sync.WaitGroup
}

func startScopeProxy(cfg *Config, log *slog.Logger) (*scopeProxy, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fixity: scope proxy: %w", err)
	}
	p := &scopeProxy{cfg: cfg, log: log, ln: ln,
		tr: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second, DisableCompression: true}}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = pr.In.URL
			pr.Out.Host = pr.In.Host
		},
		Transport: p.tr,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() == nil {
				p.log.Debug("fixity: scope proxy upstream error", "url", r.URL.String(), "err", err)
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

// addr is the proxy's host:port.
func (p *scopeProxy) addr() string { return p.ln.Addr().String() }

func (p *scopeProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || (r.URL.Scheme != "http" && r.URL.Scheme != "https") || p.cfg.ArchiveFor(r.URL.Host) == nil {
		p.refuse(w, r.URL.String())
		return
	}
	p.rp.ServeHTTP(w, r)
}

func (p *scopeProxy) refuse(w http.ResponseWriter, target string) {
	p.blocked.Add(1)
	p.log.Debug("fixity: scope proxy refused a browser request outside the archive list", "url", target)
	http.Error(w, "fixity: outside the archive list", http.StatusForbidden)
}

// connect tunnels https to archive hosts.
func (p *scopeProxy) connect(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if p.cfg.ArchiveFor(host) == nil {
		p.refuse(w, (&url.URL{Scheme: "https", Host: host}).String())
		return
	}
	d := net.Dialer{Timeout: 15 * time.Second}
	up, err := d.DialContext(r.Context(), "tcp", host)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "hijacking not supported", http.StatusInternalServerError)
		return
	}
	down, brw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	io.WriteString(down, "HTTP/1.1 200 Connection Established\r\n\r\n")
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		if n := brw.Reader.Buffered(); n > 0 {
			b, _ := brw.Reader.Peek(n)
			up.Write(b)
		}
		io.Copy(up, down)
		up.Close()
	}()
	go func() {
		defer p.wg.Done()
		io.Copy(down, up)
		down.Close()
	}()
}

func (p *scopeProxy) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if err != nil {
		p.srv.Close()
	}
	p.tr.CloseIdleConnections()
	return err
}
