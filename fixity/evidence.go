package fixity

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/network"

	"github.com/wayside-archive/wayside/crawl"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

// Evidence capture names: the two WARC files of one replay.
const (
	CaptureRewritten = "rewritten" // every response the browser received
	CaptureRaw       = "raw"       // the raw (id_) fetches, wire-exact
)

// Evidence references the WARC files a replay was kept in.
type Evidence struct {
	// Dir holds the files; relative paths are relative to the directory of
	// the manifest file.
	Dir   string         `json:"dir"`
	Files []EvidenceFile `json:"files"`
}

// EvidenceFile is one evidence WARC file and its digest.
type EvidenceFile struct {
	Capture string `json:"capture"` // CaptureRewritten or CaptureRaw
	Name    string `json:"name"`    // path relative to Evidence.Dir
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"` // of the whole file
	Records int    `json:"records"`
}

// RecordRef locates one record inside the evidence file of its side.
type RecordRef struct {
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
}

// File returns the evidence file of a capture, or nil.
func (e *Evidence) File(capture string) *EvidenceFile {
	if e == nil {
		return nil
	}
	for i := range e.Files {
		if e.Files[i].Capture == capture {
			return &e.Files[i]
		}
	}
	return nil
}

// Bytes is the total size of the evidence files.
func (e *Evidence) Bytes() int64 {
	if e == nil {
		return 0
	}
	var n int64
	for _, f := range e.Files {
		n += f.Size
	}
	return n
}

// ReplayOption configures one Replay call (functional options).
type ReplayOption func(*replayCall)

type replayCall struct {
	evidenceDir string
}

// WithEvidence keeps the replay as evidence in dir (created if missing; it
// should be new or empty): dir/rewritten/*.warc.gz holds a response and a
// request record for every response the browser received, and
// dir/raw/*.warc.gz the exact bytes of every raw (id_) fetch, both written
// with package crawl's WARC writer. The manifest's Evidence references them
// (Dir is dir as given) with their SHA-256 digests, and each response
// references its record.
func WithEvidence(dir string) ReplayOption {
	return func(c *replayCall) { c.evidenceDir = dir }
}

// evidenceSet is the evidence of one replay while it is written.
type evidenceSet struct {
	dir       string
	rewritten *warcfile.Writer
	raw       *warcfile.Writer
	rec       *crawl.Recorder
	client    *http.Client
}

// evidenceInfo are the warcinfo fields of both files.
func evidenceInfo(r *Replayer, urim, capture string) []warcio.Field {
	r.mu.Lock()
	browser := r.version
	r.mu.Unlock()
	return []warcio.Field{
		{Name: "description", Value: "Wayside fixity evidence: " + capture + " capture of one replay"},
		{Name: "wayside-urim", Value: urim},
		{Name: "wayside-capture", Value: capture},
		{Name: "wayside-policy", Value: PolicyVersion},
		{Name: "wayside-browser", Value: browser},
	}
}

func (r *Replayer) openEvidence(dir, urim string) (*evidenceSet, error) {
	e := &evidenceSet{dir: dir}
	open := func(capture string) (*warcfile.Writer, error) {
		return warcfile.OpenWriter(warcfile.WriterOptions{Dir: filepath.Join(dir, capture), Prefix: capture, NoCDXJ: true,
			MaxFileSize: 1 << 62, Info: evidenceInfo(r, urim, capture), Logger: r.log})
	}
	var err error
	if e.rewritten, err = open(CaptureRewritten); err != nil {
		return nil, fmt.Errorf("fixity: evidence: %w", err)
	}
	if e.raw, err = open(CaptureRaw); err != nil {
		e.rewritten.Close()
		return nil, fmt.Errorf("fixity: evidence: %w", err)
	}
	e.rec, err = crawl.NewRecorder(crawl.Options{Writer: e.raw, Timeout: r.opts.RawTimeout, Logger: r.log,
		Allow: func(u *url.URL) error {
			if !r.allowed(u.String()) {
				return fmt.Errorf("fixity: raw fetch outside the archive list: %s", u)
			}
			return nil
		}})
	if err != nil {
		e.rewritten.Close()
		e.raw.Close()
		return nil, fmt.Errorf("fixity: evidence: %w", err)
	}
	e.client = &http.Client{Transport: e.rec,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return e, nil
}

// abort closes the writers and removes what was written.
func (e *evidenceSet) abort() {
	e.rec.CloseIdleConnections()
	e.rewritten.Close()
	e.raw.Close()
	os.RemoveAll(e.dir)
}

// writeRewritten writes a request and a response record for every response
// the browser received (redirect hops included) and returns where the
// final response record of each request went.
//
// The browser hands over headers and decoded bodies, not wire bytes, so a
// response record holds a reconstructed HTTP/1.1 message: status line,
// headers sorted by name (one line per value), Content-Encoding,
// Transfer-Encoding and Content-Length dropped, Content-Length set to the
// length of the decoded body (text as the browser decoded it, in UTF-8).
func (e *evidenceSet) writeRewritten(ctx context.Context, reqs []trackedReq, bodies map[network.RequestID]bodyResult) (map[network.RequestID]RecordRef, error) {
	var recs []*warcio.Draft
	final := map[network.RequestID]int{} // index in recs of the final response record
	add := func(req *network.Request, resp *network.Response, u string, at time.Time, body []byte, truncated bool) int {
		respID, reqID := warcio.NewRecordID(), warcio.NewRecordID()
		if at.IsZero() {
			at = time.Now()
		}
		rr := &warcio.Draft{Type: "response", ID: respID, Date: at, Block: cdpResponseBlock(resp, body)}
		rr.Fields = []warcio.Field{{Name: "WARC-Target-URI", Value: u}, {Name: "WARC-Concurrent-To", Value: reqID},
			{Name: "Content-Type", Value: "application/http; msgtype=response"},
			{Name: "WARC-Payload-Digest", Value: digest.Of(digest.SHA1, body).String()}}
		if truncated {
			rr.Fields = append(rr.Fields, warcio.Field{Name: "WARC-Truncated", Value: "unspecified"})
		}
		if ip := resp.RemoteIPAddress; ip != "" {
			rr.Fields = append(rr.Fields, warcio.Field{Name: "WARC-IP-Address", Value: strings.Trim(ip, "[]")})
		}
		recs = append(recs, rr)
		at0 := len(recs) - 1
		if req != nil {
			q := &warcio.Draft{Type: "request", ID: reqID, Date: at, Block: cdpRequestBlock(req, u)}
			q.Fields = []warcio.Field{{Name: "WARC-Target-URI", Value: u}, {Name: "WARC-Concurrent-To", Value: respID},
				{Name: "Content-Type", Value: "application/http; msgtype=request"}}
			recs = append(recs, q)
		}
		return at0
	}
	for i := range reqs {
		q := &reqs[i]
		if pu, err := url.Parse(q.first); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") {
			continue
		}
		for _, h := range q.hops {
			if h.resp != nil {
				add(h.req, h.resp, h.url, h.time, nil, false)
			}
		}
		if q.resp == nil || !q.done || q.failed != "" {
			continue
		}
		b := bodies[q.id]
		final[q.id] = add(q.req, q.resp, q.url, q.respTime, b.data, b.err != nil && hasEntity(int(q.resp.Status)))
	}
	if len(recs) == 0 {
		return nil, nil
	}
	wr, err := e.rewritten.Write(recs...)
	if err != nil {
		return nil, fmt.Errorf("fixity: evidence: %w", err)
	}
	if _, err := e.rewritten.WaitDurable(ctx, wr); err != nil {
		return nil, fmt.Errorf("fixity: evidence: %w", err)
	}
	out := map[network.RequestID]RecordRef{}
	for id, i := range final {
		p := wr.Placements[i]
		out[id] = RecordRef{Offset: p.Offset, Length: p.Length}
	}
	return out, nil
}

// finish closes both files and returns the manifest's Evidence (Dir set to
// the directory as given).
func (e *evidenceSet) finish() (*Evidence, error) {
	e.rec.CloseIdleConnections()
	ev := &Evidence{Dir: e.dir}
	var errs []error
	for _, w := range []struct {
		capture string
		w       *warcfile.Writer
	}{{CaptureRewritten, e.rewritten}, {CaptureRaw, e.raw}} {
		records := int(w.w.Stats().Records)
		if err := w.w.Close(); err != nil {
			errs = append(errs, err)
			continue
		}
		sub := filepath.Join(e.dir, w.capture)
		os.Remove(filepath.Join(sub, ".wayside-writer.lock"))
		defer os.Remove(sub) // only if nothing was written to it
		names, err := filepath.Glob(filepath.Join(sub, "*.warc.gz"))
		if err != nil {
			errs = append(errs, err)
		}
		sort.Strings(names)
		for _, n := range names {
			f := EvidenceFile{Capture: w.capture, Name: filepath.ToSlash(filepath.Join(w.capture, filepath.Base(n))), Records: records}
			if f.Size, f.SHA256, err = fileSHA256(n); err != nil {
				errs = append(errs, err)
				continue
			}
			ev.Files = append(ev.Files, f)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("fixity: evidence: %w", err)
	}
	return ev, nil
}

// fileSHA256 returns the size and hex SHA-256 of a file.
func fileSHA256(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w", path, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// cdpHeaders iterates over a CDP header map, one call per value (the
// browser joins repeated headers with "\n"), in name order.
func cdpHeaders(hs network.Headers) func(func(name, value string)) {
	return func(f func(string, string)) {
		names := make([]string, 0, len(hs))
		for k := range hs {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			for _, v := range strings.Split(fmt.Sprint(hs[k]), "\n") {
				f(k, v)
			}
		}
	}
}

// cdpResponseBlock reconstructs an HTTP/1.1 response message (see
// writeRewritten).
func cdpResponseBlock(resp *network.Response, body []byte) []byte {
	var b bytes.Buffer
	text := resp.StatusText
	if text == "" {
		text = http.StatusText(int(resp.Status))
	}
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", resp.Status, text)
	cdpHeaders(resp.Headers)(func(k, v string) {
		switch strings.ToLower(k) {
		case "content-encoding", "transfer-encoding", "content-length":
			return
		}
		if strings.ContainsAny(k+v, "\r\n") || k == "" || strings.HasPrefix(k, ":") {
			return
		}
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	})
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	b.Write(body)
	return b.Bytes()
}

// cdpRequestBlock reconstructs the HTTP/1.1 request the browser sent.
func cdpRequestBlock(req *network.Request, u string) []byte {
	var b bytes.Buffer
	target, host := "/", ""
	if pu, err := url.Parse(u); err == nil {
		target, host = pu.RequestURI(), pu.Host
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", method, target)
	hasHost := false
	cdpHeaders(req.Headers)(func(k, v string) {
		if strings.ContainsAny(k+v, "\r\n") || k == "" || strings.HasPrefix(k, ":") {
			return
		}
		hasHost = hasHost || strings.EqualFold(k, "host")
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	})
	if !hasHost && host != "" {
		fmt.Fprintf(&b, "Host: %s\r\n", host)
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// VerifyEvidence checks the evidence files m references (m read from the
// manifest file at path): each file present must have the recorded size and
// SHA-256. Missing files are not an error (a store evicts evidence; its log
// says so) but are named in the returned note.
func VerifyEvidence(m *Manifest, path string) (string, error) {
	if m.Evidence == nil {
		return "", nil
	}
	dir := EvidenceDir(m, path)
	var missing []string
	for _, f := range m.Evidence.Files {
		name := filepath.Join(dir, filepath.FromSlash(f.Name))
		size, sum, err := fileSHA256(name)
		if errors.Is(err, os.ErrNotExist) {
			missing = append(missing, f.Name)
			continue
		}
		if err != nil {
			return "", fmt.Errorf("fixity: verify evidence of %s: %w", path, err)
		}
		if size != f.Size || sum != f.SHA256 {
			return "", fmt.Errorf("fixity: verify evidence of %s: %s is %d bytes sha256 %s, the manifest says %d bytes sha256 %s", path, name, size, sum, f.Size, f.SHA256)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf(" (evidence not present: %s)", strings.Join(missing, ", ")), nil
	}
	return fmt.Sprintf(" (evidence ok: %d files)", len(m.Evidence.Files)), nil
}
