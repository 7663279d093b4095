package sidecar

import (
	"bufio"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/wayside-archive/wayside/aggregate"
	"github.com/wayside-archive/wayside/api"
)

// parseMetrics parses exposition text with the Prometheus library's own
// parser (which also rejects malformed text).
func parseMetrics(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("metrics do not parse: %v\n%s", err, text)
	}
	return mfs
}

// TestMetricsKeepTheirNames: every metric /metrics exposed when it was
// written by hand (testdata/metrics_v1.txt, taken from that code: name,
// type, label names) is still exposed by client_golang with the same type
// and labels, the request histogram with the same buckets; beside them are
// the Go and process collectors and the newer parts' metrics.
func TestMetricsKeepTheirNames(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "crawl.log")
	os.WriteFile(logPath, []byte("2014-11-24T21:11:46.471Z   200      12345 http://www.example.com/ - - text/html #042 20141124211146143+311 sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567 - - {}\n"), 0o644)
	srv, c, _, _ := runServer(t, func(c *Config) {
		c.Ingest.CrawlLog = logPath
		c.Ingest.Dirs = []string{dir}
		// An aggregator (its archive never answers: only its metrics count here).
		c.Aggregate.Archives = []aggregate.ArchiveConfig{{Name: "a", TimeMap: "http://127.0.0.1:9/timemap/link/"}}
	})
	ctx := context.Background()
	if _, err := c.Claim(ctx, api.Key{Digest: "sha1:" + strings.Repeat("C", 32)}); err != nil {
		t.Fatal(err)
	}
	srv.metrics.ObserveSweep("demo", "unchanged", 1) // a sweep needs Chromium: TestFixitySweepOnDemand runs one
	waitUntil(t, "the crawl.log line", func() bool {
		var st Status
		return c.Status(ctx, &st) == nil && st.CrawlLog != nil && st.CrawlLog.Lines == 1
	})
	text, err := c.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mfs := parseMetrics(t, text)

	f, err := os.Open(filepath.Join("testdata", "metrics_v1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		name, typ := fields[0], fields[1]
		var want []string
		if len(fields) > 2 {
			want = strings.Split(fields[2], ",")
		}
		n++
		mf := mfs[name]
		if mf == nil || len(mf.Metric) == 0 {
			t.Errorf("%s is no longer exposed", name)
			continue
		}
		if got := strings.ToLower(mf.GetType().String()); got != typ {
			t.Errorf("%s: type %s, was %s", name, got, typ)
		}
		for _, m := range mf.Metric {
			var got []string
			for _, lp := range m.Label {
				got = append(got, lp.GetName())
			}
			sort.Strings(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s: labels %v, were %v", name, got, want)
				break
			}
		}
	}
	if n != 44 {
		t.Fatalf("testdata lists %d metrics, want the 44 of the hand-written exposition", n)
	}
	var bounds []float64
	for _, b := range mfs["wayside_http_request_duration_seconds"].Metric[0].GetHistogram().GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
	}
	if want := []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .05, .25, 1, math.Inf(1)}; !slices.Equal(bounds, want) {
		t.Errorf("request histogram buckets %v, were %v", bounds, want)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total", "process_open_fds",
		"wayside_index_op_duration_seconds", "wayside_http_connections", "wayside_http_connections_total",
		"wayside_consumer_queued", "wayside_capture_index_disk_bytes", "wayside_ingest_paused", "wayside_sweeps_running"} {
		if mf := mfs[name]; mf == nil || len(mf.Metric) == 0 {
			t.Errorf("%s is not exposed", name)
		}
	}
	if h := mfs["wayside_index_op_duration_seconds"]; h != nil && h.Metric[0].GetHistogram().GetSampleCount() != 1 {
		t.Errorf("index op histogram: %v", h.Metric[0])
	}
}
