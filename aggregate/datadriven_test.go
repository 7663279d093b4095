package aggregate_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/aggregate"
	"github.com/wayside-archive/wayside/internal/ddtest"
	"github.com/wayside-archive/wayside/replay"
)

// TestLinksDataDriven pins how link lists (Link headers, link-format
// TimeMaps) are read (testdata/links.txt).
func TestLinksDataDriven(t *testing.T) {
	ddtest.Run(t, "testdata/links.txt", func(t *testing.T, c *ddtest.Case) string {
		links, err := aggregate.ParseLinks(c.Input)
		var out []string
		for _, l := range links {
			var ps []string
			for k, v := range l.Params {
				ps = append(ps, fmt.Sprintf("%s=%q", k, v))
			}
			sort.Strings(ps)
			out = append(out, "<"+l.Target+"> "+strings.Join(ps, " "))
		}
		if err != nil {
			out = append(out, "error: "+err.Error())
		}
		return strings.Join(out, "\n")
	})
}

// TestAnswersDataDriven pins the aggregated answers (testdata/answers.txt):
// each case lists archives, each a real loopback server answering every
// TimeMap request with the case's body (or its TimeGate with the body as
// Link header), and shows the status, headers and body the aggregate
// routes answer — MemGator's link and JSON formats, partial markers, 404,
// 502 and 400 answers.
//
//	timemap|timegate|get path=<rest of the route> [accept-datetime=…]
//	archive <name> [status=N] [priority=N] [timegate]
//	<body lines>
func TestAnswersDataDriven(t *testing.T) {
	ddtest.Run(t, "testdata/answers.txt", func(t *testing.T, c *ddtest.Case) string {
		cfg := aggregate.Config{}
		var name string
		bodies := map[string][]string{}
		status := map[string]int{}
		for _, l := range strings.Split(strings.TrimSuffix(c.Input, "\n"), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "archive" {
				name = f[1]
				ac := aggregate.ArchiveConfig{Name: name}
				for _, o := range f[2:] {
					k, v, _ := strings.Cut(o, "=")
					n, _ := strconv.Atoi(v)
					switch k {
					case "status":
						status[name] = n
					case "priority":
						ac.Priority = n
					case "timegate":
						ac.TimeGate = "set"
					}
				}
				cfg.Archives = append(cfg.Archives, ac)
				continue
			}
			bodies[name] = append(bodies[name], l)
		}
		for i := range cfg.Archives {
			ac := &cfg.Archives[i]
			body, code := bodies[ac.Name], status[ac.Name]
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(r.URL.Path, "/tg/") {
					if code == 0 {
						code = http.StatusFound
					}
					w.Header().Set("Link", strings.Join(body, " "))
					w.WriteHeader(code)
					return
				}
				if code != 0 {
					w.WriteHeader(code)
				}
				w.Write([]byte(strings.Join(body, "\n")))
			}))
			t.Cleanup(srv.Close)
			ac.TimeMap = srv.URL + "/tm/"
			if ac.TimeGate != "" {
				ac.TimeGate = srv.URL + "/tg/"
			}
		}
		a := newAggregator(t, cfg)
		rest := c.Arg("path", "")
		switch c.Cmd {
		case "timemap":
			rest = "timemap/" + c.Arg("format", "link") + "/" + rest
		case "timegate", "get":
		default:
			t.Fatalf("%s: unknown command %s", c.Pos, c.Cmd)
		}
		req := httptest.NewRequest(http.MethodGet, "http://agg.test/aggregate/"+rest, nil)
		if v := c.Arg("accept-datetime", ""); v != "" {
			req.Header.Set("Accept-Datetime", strings.ReplaceAll(v, "_", " "))
		}
		rec := httptest.NewRecorder()
		if err := a.Serve(rec, req, strings.TrimPrefix(req.URL.EscapedPath(), "/aggregate/"), "http://agg.test/aggregate"); err != nil {
			return describeError(err)
		}
		body := rec.Body.String()
		if c.Cmd == "get" {
			body = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/`).ReplaceAllString(body, "http://ARCHIVE/")
		}
		return describe(rec.Result().StatusCode, rec.Result().Header, body)
	})
}

var shownHeaders = []string{"Content-Type", "Location", "Vary", "X-Memento-Count", aggregate.HeaderAsked, aggregate.HeaderAvoided, aggregate.HeaderPartial, "Link"}

func describe(code int, h http.Header, body string) string {
	out := []string{fmt.Sprintf("status %d", code)}
	for _, k := range shownHeaders {
		v := h.Get(k)
		if v == "" {
			continue
		}
		if k == "Link" {
			v = strings.ReplaceAll(v, ", <", ",\n  <")
		}
		out = append(out, k+": "+v)
	}
	if body = strings.TrimRight(body, "\n"); body != "" {
		out = append(out, "body:", body)
	}
	return strings.Join(out, "\n")
}

func describeError(err error) string {
	e, ok := err.(*replay.Error)
	if !ok {
		return "error: " + err.Error()
	}
	return describe(e.Code, e.Header, e.Msg)
}
