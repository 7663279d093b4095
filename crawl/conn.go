package crawl

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"strconv"
	"sync"
)

// exchange collects the raw bytes of one HTTP request/response exchange as
// they cross the connection (after TLS, before any HTTP parsing).
type exchange struct {
	req, resp bytes.Buffer
	remote    net.Addr
	conn      *recConn
	// maxBody, when positive, caps the response bytes recorded after the
	// header block; cut reports that bytes were dropped.
	maxBody int64
	headEnd int // end of the response head in resp, 0 while unknown
	cut     bool
}

// addResp appends response bytes, enforcing maxBody.
func (ex *exchange) addResp(p []byte) {
	if ex.maxBody <= 0 {
		ex.resp.Write(p)
		return
	}
	if ex.headEnd == 0 {
		from := max(ex.resp.Len()-3, 0)
		ex.resp.Write(p)
		if i := bytes.Index(ex.resp.Bytes()[from:], []byte("\r\n\r\n")); i >= 0 {
			ex.headEnd = from + i + 4
		} else {
			return
		}
		// Room for the whole body at once: growing by doubling as it
		// arrives allocates (and leaves to the collector) twice as much.
		if n := headContentLength(ex.resp.Bytes()[:ex.headEnd]); n > 0 {
			if more := ex.headEnd + int(min(n, ex.maxBody, maxPresize)) - ex.resp.Len(); more > 0 {
				ex.resp.Grow(more)
			}
		}
		if limit := ex.headEnd + int(ex.maxBody); ex.resp.Len() > limit {
			ex.resp.Truncate(limit)
			ex.cut = true
		}
		return
	}
	room := ex.headEnd + int(ex.maxBody) - ex.resp.Len()
	if room < len(p) {
		p = p[:max(room, 0)]
		ex.cut = true
	}
	ex.resp.Write(p)
}

// maxPresize bounds the body a response's Content-Length makes the
// exchange reserve room for before the bytes arrive.
const maxPresize = 64 << 20

// headContentLength returns the Content-Length declared in a raw HTTP
// response head, or -1.
func headContentLength(head []byte) int64 {
	for len(head) > 0 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || !bytes.EqualFold(bytes.TrimSpace(name), []byte("Content-Length")) {
			continue
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
		if err != nil || n < 0 {
			return -1
		}
		return n
	}
	return -1
}

// recConn wraps a connection and appends every byte written or read to the
// exchange currently attached to it. The transport attaches an exchange when
// it hands the connection to a request (httptrace GotConn, before the request
// is written) and the recorder detaches it once the response body has been
// read to its end, so on a kept-alive connection each exchange sees exactly
// its own request and response: HTTP/1.1 without pipelining never has bytes
// of two exchanges in flight on one connection. Bytes read while no exchange
// is attached (a server talking out of turn on an idle connection) are not
// recorded; net/http rejects them as unsolicited anyway. Bytes written are
// recorded before the write system call and bytes read before Read returns,
// so by the time the response body has been consumed both sides of the
// exchange are complete in its buffers.
type recConn struct {
	net.Conn
	mu sync.Mutex
	ex *exchange
}

func (c *recConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if c.ex != nil {
			c.ex.addResp(p[:n])
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *recConn) Write(p []byte) (int, error) {
	// The bytes are recorded before they are sent: the server may answer
	// and the recorder finish the exchange before this goroutine returns
	// from the write system call.
	c.mu.Lock()
	ex := c.ex
	var mark int
	if ex != nil {
		mark = ex.req.Len()
		ex.req.Write(p)
	}
	c.mu.Unlock()
	n, err := c.Conn.Write(p)
	if n < len(p) && ex != nil {
		// Only what was sent belongs in the record (the exchange fails
		// anyway, unless the server already answered).
		c.mu.Lock()
		if c.ex == ex {
			ex.req.Truncate(mark + n)
		}
		c.mu.Unlock()
	}
	return n, err
}

// attach makes ex the exchange recorded on c. A retry of the same request on
// another connection attaches afresh, dropping what the failed attempt saw.
func (c *recConn) attach(ex *exchange) {
	c.mu.Lock()
	if ex.conn != nil && ex.conn != c {
		ex.conn.detach(ex)
	}
	ex.req.Reset()
	ex.resp.Reset()
	ex.headEnd, ex.cut = 0, false
	ex.remote = c.Conn.RemoteAddr()
	ex.conn = c
	c.ex = ex
	c.mu.Unlock()
}

func (c *recConn) detach(ex *exchange) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.ex == ex {
		c.ex = nil
	}
	c.mu.Unlock()
}

// snapshot returns copies-free views of the captured bytes after detaching.
func (ex *exchange) finish() (req, resp []byte) {
	if ex.conn != nil {
		ex.conn.detach(ex)
	}
	return ex.req.Bytes(), ex.resp.Bytes()
}

type dialer struct {
	d   net.Dialer
	tls *tls.Config
}

func (d *dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &recConn{Conn: c}, nil
}

// dialTLS dials and handshakes itself so the recorded bytes are the
// plaintext HTTP/1.1 exchange inside TLS; ALPN offers only http/1.1.
func (d *dialer) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	raw, err := d.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	cfg := &tls.Config{}
	if d.tls != nil {
		cfg = d.tls.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	cfg.NextProtos = []string{"http/1.1"}
	tc := tls.Client(raw, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	return &recConn{Conn: tc}, nil
}
