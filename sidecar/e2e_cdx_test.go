package sidecar_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The three CDX clients, re-implemented from their source as they issue
// requests and parse answers:
//   - Heritrix 3 WbmPersistLoadProcessor (heritrix-contrib): Apache HttpClient
//     4.x GET of the queryURL template with $u = URLEncoder.encode(uri,
//     "UTF-8"), headers Accept-Encoding: gzip,deflate (the client inflates),
//     status must be 200, body parsed byte by byte (getLastCrawl).
//   - Zeno / IA gowarc checkCDXRevisit: Go net/http GET
//     {base}/web/timemap/cdx?url=QueryEscape(uri)&limit=-1, status ignored,
//     strings.Fields, ≥7 tokens, [3] != warc/revisit, [5] == digest.
//   - warcprox CdxServerDedup.lookup: urllib3 GET cdx_url?url=..&fl=timestamp,digest
//     &filter=!mimetype:warc/revisit&limit=-1 (urlencode of a dict, in
//     that order), headers User-Agent: warcprox, Accept-Encoding: gzip,
//     deflate; asserts status 200; body.strip().split(b' ') must give exactly
//     two values; digest compared as a string (hex by default).

// javaURLEncode is java.net.URLEncoder.encode(s, "UTF-8").
func javaURLEncode(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '*', c == '_':
			b.WriteByte(c)
		case c == ' ':
			b.WriteByte('+')
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// pythonQuotePlus is urllib.parse.quote_plus (what urlencode applies).
func pythonQuotePlus(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '~', c == '_':
			b.WriteByte(c)
		case c == ' ':
			b.WriteByte('+')
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// heritrixLastCrawl ports WbmPersistLoadProcessor.getLastCrawl: it returns
// the content digest ("sha1:" + 32 chars) and 14-digit timestamp, each ""
// when not found. Like Heritrix, state carries across lines and the last
// valid line wins.
func heritrixLastCrawl(body []byte) (digest, ts string) {
	r := bufio.NewReader(bytes.NewReader(body))
	read := func() int {
		b, err := r.ReadByte()
		if err != nil {
			return -1
		}
		return int(b)
	}
	isDigit := func(c int) bool { return c >= '0' && c <= '9' }
	buffer := make([]byte, 0, 32)
	tsbuffer := make([]byte, 0, 14)
	field := 0
	var c int
	for {
		c = read()
		if field == 1 {
			tsbuffer = tsbuffer[:0]
			for isDigit(c) && len(tsbuffer) < 14 {
				tsbuffer = append(tsbuffer, byte(c))
				c = read()
			}
			if c != ' ' || len(tsbuffer) != 14 {
				tsbuffer = tsbuffer[:0]
			}
		} else if field == 5 {
			buffer = buffer[:0]
			for (c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') && len(buffer) < 32 {
				buffer = append(buffer, byte(c))
				c = read()
			}
			if c != ' ' || len(buffer) != 32 {
				buffer = buffer[:0]
			}
		}
		for {
			if c == -1 {
				break
			} else if c == '\n' {
				field = 0
				break
			} else if c == ' ' {
				field++
				break
			}
			c = read()
		}
		if c == -1 {
			break
		}
	}
	if len(buffer) == 32 {
		digest = "sha1:" + string(buffer)
	}
	if len(tsbuffer) == 14 {
		ts = string(tsbuffer)
	}
	return digest, ts
}

// heritrixGet does what Heritrix's HttpClient does: GET with its default
// headers, inflate a gzip answer, require 200.
func heritrixGet(t *testing.T, queryURL string) (int, []byte) {
	t.Helper()
	u, _ := url.Parse(queryURL)
	resp := httpGetRaw(t, queryURL, map[string]string{
		"Host":            u.Host,
		"Connection":      "Keep-Alive",
		"User-Agent":      "Apache-HttpClient/4.5.13 (Java/11.0.20)",
		"Accept-Encoding": "gzip,deflate",
	})
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatalf("heritrix: gzip answer does not inflate: %v", err)
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// zenoCheck is gowarc's checkCDXRevisit: it returns the CDX timestamp of a
// hit ("" on a miss).
func zenoCheck(t *testing.T, base, digest, targetURI string) (ts string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(base + "/web/timemap/cdx?url=" + url.QueryEscape(targetURI) + "&limit=-1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	f := strings.Fields(string(body))
	if len(f) >= 7 && f[3] != "warc/revisit" && f[5] == strings.TrimPrefix(digest, "sha1:") {
		return f[1]
	}
	return ""
}

// warcproxLookup is CdxServerDedup.lookup: it returns the revisit date
// ("" for no dedup) or fails the test where warcprox would log an error.
func warcproxLookup(t *testing.T, cdxURL, digestKey, uri string) (date string, ok bool) {
	t.Helper()
	q := "url=" + pythonQuotePlus(uri) + "&fl=" + pythonQuotePlus("timestamp,digest") +
		"&filter=" + pythonQuotePlus("!mimetype:warc/revisit") + "&limit=-1"
	u, _ := url.Parse(cdxURL)
	resp := httpGetRaw(t, cdxURL+"?"+q, map[string]string{
		"Host": u.Host, "User-Agent": "warcprox", "Accept-Encoding": "gzip, deflate",
	})
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", false // warcprox: AssertionError, logged, no dedup
	}
	var body io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatalf("warcprox: urllib3 would fail to decode: %v", err)
		}
		body = zr
	}
	data, _ := io.ReadAll(body)
	dkey := strings.TrimPrefix(digestKey, "sha1:")
	line := strings.TrimSpace(string(data))
	if line == "" {
		return "", true
	}
	parts := strings.Split(line, " ")
	if len(parts) != 2 {
		t.Fatalf("warcprox: body %q does not split into exactly (ts, digest): ValueError", line)
	}
	if parts[1] != dkey {
		return "", true
	}
	d, err := time.Parse("20060102150405", parts[0])
	if err != nil {
		t.Fatalf("warcprox: bad timestamp %q", parts[0])
	}
	return d.Format("2006-01-02T15:04:05Z"), true
}

const cdxTestConfig = `
data_dir: DIR/data
listen:
  tcp: 127.0.0.1:0
  token: ${WAYSIDE_TEST_TOKEN}
  cdx_token: ` + testCDXToken + `
ingest:
  dirs: [DIR/warcs]
  poll_interval: 50ms
`

func TestE2ECDXClients(t *testing.T) {
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warcs")
	os.MkdirAll(warcs, 0o755)

	t0 := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	bodyA1 := bytes.Repeat([]byte("page A version 1 "), 100)
	bodyA2 := bytes.Repeat([]byte("page A version 2 "), 100)
	bodyB := bytes.Repeat([]byte("page B "), 200)
	recs := []warcRec{
		{Type: "response", URI: "http://example.com/a", Date: t0, ID: recID(1), Body: bodyA1},
		{Type: "response", URI: "http://example.com/a", Date: t0.Add(time.Hour), ID: recID(2), Body: bodyA2, Chunked: true},
		// The newest capture of /a is a revisit of version 2: answers must
		// carry version 2's own timestamp, never the revisit's.
		{Type: "revisit", URI: "http://example.com/a", Date: t0.Add(2 * time.Hour), ID: recID(3), Digest: "sha1:" + sha1B32(bodyA2), RefURI: "http://example.com/a", RefDate: t0.Add(time.Hour)},
		{Type: "response", URI: "http://example.com/b?x=1 2", Date: t0, ID: recID(4), Body: bodyB},
		// Only a revisit for /c: no original → a miss for every client.
		{Type: "revisit", URI: "http://example.com/c", Date: t0, ID: recID(5), Digest: "sha1:" + sha1B32(bodyB), RefURI: "http://example.com/b?x=1 2", RefDate: t0},
		// A response cut short (WARC-Truncated): never an original.
		{Type: "response", URI: "http://example.com/d", Date: t0, ID: recID(6), Body: []byte("cut short payload"), Truncated: true},
	}
	var w bytes.Buffer
	for _, r := range recs {
		w.Write(r.bytes())
	}
	if err := os.WriteFile(filepath.Join(warcs, "cdx-test.warc.gz"), w.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, cdxTestConfig)
	if d.tcp == "" {
		t.Fatal("no TCP listener")
	}
	waitFor(t, "ingest of cdx-test.warc.gz", func() bool {
		st, err := d.client.Ingest(context.Background())
		return err == nil && st.Records == int64(len(recs))
	})
	tsA2 := t0.Add(time.Hour).Format("20060102150405")
	tsB := t0.Format("20060102150405")
	digA2 := "sha1:" + sha1B32(bodyA2)
	digB := "sha1:" + sha1B32(bodyB)
	base := d.tcp + "/t/" + testCDXToken

	t.Run("heritrix", func(t *testing.T) {
		tmpl := base + "/web/timemap/cdx?url=$u&limit=-1"
		for _, tc := range []struct {
			uri, digest, ts string
		}{
			{"http://example.com/a", digA2, tsA2},
			{"http://example.com/b?x=1 2", digB, tsB},
			{"http://example.com/c", "", ""},
			{"http://example.com/d", "", ""},
			{"http://example.com/never", "", ""},
		} {
			code, body := heritrixGet(t, strings.ReplaceAll(tmpl, "$u", javaURLEncode(tc.uri)))
			if code != 200 {
				t.Fatalf("%s: status %d (Heritrix retries 3 times, then gives up): %s", tc.uri, code, body)
			}
			dg, ts := heritrixLastCrawl(body)
			if dg != tc.digest || ts != tc.ts {
				t.Errorf("%s: Heritrix loads digest %q ts %q, want %q %q (body %q)", tc.uri, dg, ts, tc.digest, tc.ts, body)
			}
			if tc.digest == "" && len(body) != 0 {
				t.Errorf("%s: a miss must be an empty body, got %q", tc.uri, body)
			}
		}
		// Heritrix's HttpClient asks for gzip: a hit is compressed.
		u := strings.ReplaceAll(tmpl, "$u", javaURLEncode("http://example.com/a"))
		resp := httpGetRaw(t, u, map[string]string{"Accept-Encoding": "gzip,deflate"})
		resp.Body.Close()
		if resp.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("hit not gzip-compressed for Accept-Encoding gzip,deflate")
		}
	})

	t.Run("zeno", func(t *testing.T) {
		if ts := zenoCheck(t, base, digA2, "http://example.com/a"); ts != tsA2 {
			t.Errorf("zeno /a: ts %q, want %q", ts, tsA2)
		}
		if ts := zenoCheck(t, base, "sha1:"+sha1B32(bodyA1), "http://example.com/a"); ts != "" {
			t.Errorf("zeno /a with the old digest: hit %q, want a miss (only the newest original counts)", ts)
		}
		if ts := zenoCheck(t, base, digB, "http://example.com/b?x=1 2"); ts != tsB {
			t.Errorf("zeno /b: ts %q, want %q", ts, tsB)
		}
		if ts := zenoCheck(t, base, digB, "http://example.com/c"); ts != "" {
			t.Errorf("zeno /c (revisit only): hit %q, want miss", ts)
		}
	})

	t.Run("warcprox", func(t *testing.T) {
		hexOf := func(d string) string {
			raw, _ := b32.DecodeString(strings.TrimPrefix(d, "sha1:"))
			return "sha1:" + hex.EncodeToString(raw)
		}
		// Default warcprox: hex digests; cdx_url has no query (urllib3 appends "?...").
		hexURL := base + "/hex/cdx"
		if date, ok := warcproxLookup(t, hexURL, hexOf(digA2), "http://example.com/a"); !ok || date != t0.Add(time.Hour).Format("2006-01-02T15:04:05Z") {
			t.Errorf("warcprox hex /a: %q %v", date, ok)
		}
		if date, ok := warcproxLookup(t, hexURL, hexOf(digB), "http://example.com/c"); !ok || date != "" {
			t.Errorf("warcprox hex /c: %q %v, want no dedup", date, ok)
		}
		// warcprox --base32.
		if date, ok := warcproxLookup(t, base+"/cdx", digB, "http://example.com/b?x=1 2"); !ok || date != t0.Format("2006-01-02T15:04:05Z") {
			t.Errorf("warcprox base32 /b: %q %v", date, ok)
		}
	})

	t.Run("outbackcdx", func(t *testing.T) {
		resp := httpGetRaw(t, base+"/cdx?url="+url.QueryEscape("http://example.com/a")+"&sort=reverse&limit=1&filter=!mimetype:warc/revisit", nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		f := strings.Fields(string(b))
		if len(f) != 7 || f[1] != tsA2 || f[3] == "warc/revisit" {
			t.Errorf("sort=reverse&limit=1: %q", b)
		}
		resp = httpGetRaw(t, base+"/cdx?url="+url.QueryEscape("http://example.com/a"), nil)
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if n := strings.Count(string(b), "\n"); n != 2 {
			t.Errorf("all originals of /a: want 2 lines (never the revisit), got %q", b)
		}
	})

	t.Run("token", func(t *testing.T) {
		resp := httpGetRaw(t, d.tcp+"/t/wrong-token-0123456789/web/timemap/cdx?url=x", nil)
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("wrong path token: %d", resp.StatusCode)
		}
		resp = httpGetRaw(t, d.tcp+"/web/timemap/cdx?url=x", nil)
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("no token on TCP: %d", resp.StatusCode)
		}
		// The CDX token in a header (Heritrix requestHeaders) opens CDX
		// queries, and nothing else.
		resp = httpGetRaw(t, d.tcp+"/web/timemap/cdx?url=x&limit=-1", map[string]string{"X-Wayside-Token": testCDXToken})
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("CDX token header on CDX: %d", resp.StatusCode)
		}
		resp = httpGetRaw(t, d.tcp+"/v1/status", map[string]string{"X-Wayside-Token": testCDXToken})
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("CDX token header on /v1/status: %d, want 401", resp.StatusCode)
		}
		// The read-only path token grants nothing but CDX queries.
		resp = httpGetRaw(t, base+"/v1/status", nil)
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Errorf("path token on /v1/status: %d, want 403", resp.StatusCode)
		}
	})
}
