package sidecar

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/ingest"
	"github.com/wayside-archive/wayside/internal/iox"
	"github.com/wayside-archive/wayside/internal/promtext"
)

// Metrics are the daemon's counters, exposed at /metrics in the Prometheus
// text exposition format (version 0.0.4), written without a client library.
type Metrics struct {
	started time.Time

	Lookups         atomic.Int64 // digest lookups answered
	LookupHits      atomic.Int64
	Claims          atomic.Int64 // claim calls
	ClaimsClaimed   atomic.Int64
	ClaimsDuplicate atomic.Int64
	ClaimsPending   atomic.Int64
	Commits         atomic.Int64
	Cancels         atomic.Int64
	ClaimsExpired   atomic.Int64 // claims cancelled after limits.claim_ttl
	Revisits        atomic.Int64 // duplicates reported (each a revisit a crawler may write)
	BytesSaved      atomic.Int64 // payload bytes of duplicates
	CDXQueries      atomic.Int64
	CDXHits         atomic.Int64
	CDXLinesAdded   atomic.Int64
	// Ingest are the WARC ingester's counters.
	Ingest        *ingest.Counters
	SweepRuns     atomic.Int64
	SweepFailures atomic.Int64

	mu       sync.RWMutex
	requests map[[3]string]*atomic.Int64 // route, method, code
	sweeps   map[[2]string]int64         // sweep, result class
	latency  *promtext.Histogram
}

// NewMetrics returns zeroed metrics.
func NewMetrics() *Metrics {
	return &Metrics{
		started:  time.Now(),
		Ingest:   &ingest.Counters{},
		requests: map[[3]string]*atomic.Int64{},
		sweeps:   map[[2]string]int64{},
		latency:  promtext.NewHistogram([]float64{.0001, .00025, .0005, .001, .0025, .005, .01, .05, .25, 1}),
	}
}

// ObserveRequest counts one HTTP request.
func (m *Metrics) ObserveRequest(route, method string, code int, d time.Duration) {
	k := [3]string{route, method, codeString(code)}
	m.mu.RLock()
	c := m.requests[k]
	m.mu.RUnlock()
	if c == nil {
		m.mu.Lock()
		if c = m.requests[k]; c == nil {
			c = new(atomic.Int64)
			m.requests[k] = c
		}
		m.mu.Unlock()
	}
	c.Add(1)
	m.latency.Observe(d.Seconds())
}

func codeString(code int) string {
	switch code {
	case 200:
		return "200"
	case 400:
		return "400"
	case 404:
		return "404"
	}
	return strconv.Itoa(code)
}

// ObserveSweep counts sweep results by class ("unchanged", "changed", "error", ...).
func (m *Metrics) ObserveSweep(sweep, class string, n int64) {
	m.mu.Lock()
	m.sweeps[[2]string{sweep, class}] += n
	m.mu.Unlock()
}

// WriteTo writes the exposition text.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriter(w)
	cw := &iox.CountWriter{W: bw}
	counter := func(name, help string, v int64) {
		fmt.Fprintf(cw, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
	}
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(cw, "# HELP %s %s\n# TYPE %s gauge\n%s %s\n", name, help, name, name, formatFloat(v))
	}
	counter("wayside_lookups_total", "Digest lookups answered.", m.Lookups.Load())
	counter("wayside_lookup_hits_total", "Digest lookups that found a committed original.", m.LookupHits.Load())
	fmt.Fprintf(cw, "# HELP wayside_claims_total Claim calls by outcome.\n# TYPE wayside_claims_total counter\n")
	fmt.Fprintf(cw, "wayside_claims_total{state=\"claimed\"} %d\n", m.ClaimsClaimed.Load())
	fmt.Fprintf(cw, "wayside_claims_total{state=\"duplicate\"} %d\n", m.ClaimsDuplicate.Load())
	fmt.Fprintf(cw, "wayside_claims_total{state=\"pending\"} %d\n", m.ClaimsPending.Load())
	counter("wayside_commits_total", "Claims committed.", m.Commits.Load())
	counter("wayside_cancels_total", "Claims cancelled.", m.Cancels.Load())
	counter("wayside_claims_expired_total", "Claims cancelled by the daemon after limits.claim_ttl.", m.ClaimsExpired.Load())
	counter("wayside_revisits_total", "Duplicates reported to crawlers (revisits they may write).", m.Revisits.Load())
	counter("wayside_bytes_saved_total", "Payload bytes of reported duplicates.", m.BytesSaved.Load())
	counter("wayside_cdx_queries_total", "CDX queries answered.", m.CDXQueries.Load())
	counter("wayside_cdx_hits_total", "CDX queries answered with at least one line.", m.CDXHits.Load())
	counter("wayside_cdx_lines_added_total", "CDX/CDXJ lines added over the API.", m.CDXLinesAdded.Load())
	counter("wayside_ingest_records_total", "WARC records read by the directory watcher.", m.Ingest.Records.Load())
	counter("wayside_ingest_originals_total", "Original captures indexed from watched WARCs.", m.Ingest.Originals.Load())
	counter("wayside_ingest_revisits_total", "Revisit records seen in watched WARCs (never indexed).", m.Ingest.Revisits.Load())
	counter("wayside_ingest_bytes_total", "Raw WARC bytes consumed by the watcher.", m.Ingest.Bytes.Load())
	counter("wayside_ingest_errors_total", "Errors reading watched WARCs.", m.Ingest.Errors.Load())
	counter("wayside_ingest_truncated_files_total", "Finished WARC files ending in a partial record.", m.Ingest.Truncated.Load())
	gauge("wayside_ingest_lag_bytes", "Bytes in watched WARC files not yet ingested.", float64(m.Ingest.LagBytes.Load()))
	gauge("wayside_ingest_lag_seconds", "Age of the oldest WARC bytes not yet ingested.", time.Duration(m.Ingest.LagNanos.Load()).Seconds())
	counter("wayside_sweep_runs_total", "Fixity sweeps run.", m.SweepRuns.Load())
	counter("wayside_sweep_failures_total", "Fixity sweeps that failed to run.", m.SweepFailures.Load())
	gauge("wayside_uptime_seconds", "Seconds since the daemon started.", time.Since(m.started).Seconds())

	m.mu.RLock()
	defer m.mu.RUnlock()
	fmt.Fprintf(cw, "# HELP wayside_sweep_results_total Fixity sweep results by class.\n# TYPE wayside_sweep_results_total counter\n")
	for _, k := range sortedKeys2(m.sweeps) {
		fmt.Fprintf(cw, "wayside_sweep_results_total{sweep=\"%s\",class=\"%s\"} %d\n", escLabel(k[0]), escLabel(k[1]), m.sweeps[k])
	}
	fmt.Fprintf(cw, "# HELP wayside_http_requests_total HTTP requests by route, method and status code.\n# TYPE wayside_http_requests_total counter\n")
	keys := make([][3]string, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return strings.Join(keys[i][:], "\x00") < strings.Join(keys[j][:], "\x00")
	})
	for _, k := range keys {
		fmt.Fprintf(cw, "wayside_http_requests_total{route=\"%s\",method=\"%s\",code=\"%s\"} %d\n", escLabel(k[0]), escLabel(k[1]), k[2], m.requests[k].Load())
	}
	fmt.Fprintf(cw, "# HELP wayside_http_request_duration_seconds HTTP request latency.\n# TYPE wayside_http_request_duration_seconds histogram\n")
	m.latency.Write(cw, "wayside_http_request_duration_seconds", "")
	if err := bw.Flush(); err != nil {
		return cw.N, err
	}
	return cw.N, nil
}

func sortedKeys2(m map[[2]string]int64) [][2]string {
	keys := make([][2]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	return keys
}

func formatFloat(v float64) string { return promtext.FormatFloat(v) }

// escLabel escapes a label value: backslash, double quote and newline.
func escLabel(s string) string { return promtext.EscLabel(s) }

// writeConsumerMetrics writes the capture spine's per-consumer counters.
func writeConsumerMetrics(w io.Writer, stats []wayside.ConsumerStats) {
	fmt.Fprintf(w, "# HELP wayside_consumer_captures_total Captures handed to each consumer of the capture spine, by outcome.\n# TYPE wayside_consumer_captures_total counter\n")
	for _, c := range stats {
		n := escLabel(c.Name)
		fmt.Fprintf(w, "wayside_consumer_captures_total{consumer=\"%s\",outcome=\"delivered\"} %d\n", n, c.Delivered)
		fmt.Fprintf(w, "wayside_consumer_captures_total{consumer=\"%s\",outcome=\"failed\"} %d\n", n, c.Failed)
		fmt.Fprintf(w, "wayside_consumer_captures_total{consumer=\"%s\",outcome=\"dropped\"} %d\n", n, c.Dropped)
	}
	fmt.Fprintf(w, "# HELP wayside_consumer_behind Whether a consumer missed captures it has not caught up on yet.\n# TYPE wayside_consumer_behind gauge\n")
	for _, c := range stats {
		b := 0
		if c.Behind {
			b = 1
		}
		fmt.Fprintf(w, "wayside_consumer_behind{consumer=\"%s\"} %d\n", escLabel(c.Name), b)
	}
}
