package sidecar

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wayside-archive/wayside/ingest"
)

// Metrics are the daemon's counters and histograms, exposed at /metrics by
// prometheus/client_golang from a registry of the Server's own (no global
// registry), with the Go runtime and process collectors. The counters the
// handlers bump are atomics (also read by /v1/status); the registry reads
// them at scrape time. Packages that serve from the daemon register their
// own collectors on Registerer.
type Metrics struct {
	reg     *prometheus.Registry
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

	requests      *prometheus.CounterVec   // route, method, code
	latency       prometheus.Histogram     // every request
	indexOps      *prometheus.HistogramVec // op
	ingestBatches prometheus.Histogram
	sweeps        *prometheus.CounterVec   // sweep, class
	sweepDuration *prometheus.HistogramVec // sweep
	conns         *prometheus.GaugeVec     // listener
	connsTotal    *prometheus.CounterVec   // listener

	// reqCounters holds the children of requests already used (reqKey →
	// prometheus.Counter; standard methods only) and indexObs those of
	// indexOps (op → prometheus.Observer): resolving a child hashes and
	// validates its labels on every call. A child is still made on first
	// use, so /metrics shows the same series as before.
	reqCounters sync.Map
	indexObs    sync.Map
}

type reqKey struct {
	route, method string
	code          int
}

// NewMetrics returns zeroed metrics in a new registry holding them, the Go
// runtime collector and the process collector.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), started: time.Now(), Ingest: &ingest.Counters{}}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	counter := func(name, help string, v *atomic.Int64, labels prometheus.Labels) {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return float64(v.Load()) }))
	}
	counter("wayside_lookups_total", "Digest lookups answered.", &m.Lookups, nil)
	counter("wayside_lookup_hits_total", "Digest lookups that found a committed original.", &m.LookupHits, nil)
	for state, v := range map[string]*atomic.Int64{"claimed": &m.ClaimsClaimed, "duplicate": &m.ClaimsDuplicate, "pending": &m.ClaimsPending} {
		counter("wayside_claims_total", "Claim calls by outcome.", v, prometheus.Labels{"state": state})
	}
	counter("wayside_commits_total", "Claims committed.", &m.Commits, nil)
	counter("wayside_cancels_total", "Claims cancelled.", &m.Cancels, nil)
	counter("wayside_claims_expired_total", "Claims cancelled by the daemon after limits.claim_ttl.", &m.ClaimsExpired, nil)
	counter("wayside_revisits_total", "Duplicates reported to crawlers (revisits they may write).", &m.Revisits, nil)
	counter("wayside_bytes_saved_total", "Payload bytes of reported duplicates.", &m.BytesSaved, nil)
	counter("wayside_cdx_queries_total", "CDX queries answered.", &m.CDXQueries, nil)
	counter("wayside_cdx_hits_total", "CDX queries answered with at least one line.", &m.CDXHits, nil)
	counter("wayside_cdx_lines_added_total", "CDX/CDXJ lines added over the API.", &m.CDXLinesAdded, nil)
	counter("wayside_ingest_records_total", "WARC records read by the directory watcher.", &m.Ingest.Records, nil)
	counter("wayside_ingest_originals_total", "Original captures indexed from watched WARCs.", &m.Ingest.Originals, nil)
	counter("wayside_ingest_revisits_total", "Revisit records seen in watched WARCs (never indexed).", &m.Ingest.Revisits, nil)
	counter("wayside_ingest_bytes_total", "Raw WARC bytes consumed by the watcher.", &m.Ingest.Bytes, nil)
	counter("wayside_ingest_errors_total", "Errors reading watched WARCs.", &m.Ingest.Errors, nil)
	counter("wayside_ingest_truncated_files_total", "Finished WARC files ending in a partial record.", &m.Ingest.Truncated, nil)
	counter("wayside_sweep_runs_total", "Fixity sweeps run.", &m.SweepRuns, nil)
	counter("wayside_sweep_failures_total", "Fixity sweeps that failed to run.", &m.SweepFailures, nil)
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wayside_uptime_seconds", Help: "Seconds since the daemon started."},
		func() float64 { return time.Since(m.started).Seconds() }))

	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wayside_http_requests_total",
		Help: "HTTP requests by route, method and status code."}, []string{"route", "method", "code"})
	m.latency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "wayside_http_request_duration_seconds",
		Help: "HTTP request latency.", Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .05, .25, 1}})
	m.indexOps = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "wayside_index_op_duration_seconds",
		Help:    "Dedup index operations the API made (lookup, claim, commit, cancel, put), by operation.",
		Buckets: prometheus.ExponentialBuckets(25e-6, 2.5, 12)}, []string{"op"})
	m.ingestBatches = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "wayside_ingest_batch_duration_seconds",
		Help:    "Time to make one ingest batch durable: WARC fsync, index entries, CDXJ lines, checkpoint.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12)})
	m.sweeps = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wayside_sweep_results_total",
		Help: "Fixity sweep results by class."}, []string{"sweep", "class"})
	m.sweepDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "wayside_sweep_duration_seconds",
		Help: "Duration of fixity sweeps.", Buckets: prometheus.ExponentialBuckets(1, 3, 10)}, []string{"sweep"})
	m.conns = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "wayside_http_connections",
		Help: "Connections open on each listener (at most limits.max_conns)."}, []string{"listener"})
	m.connsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wayside_http_connections_total",
		Help: "Connections accepted on each listener."}, []string{"listener"})
	m.reg.MustRegister(m.requests, m.latency, m.indexOps, m.ingestBatches, m.sweeps, m.sweepDuration, m.conns, m.connsTotal)
	return m
}

// Registerer is where other parts of the daemon register their collectors.
func (m *Metrics) Registerer() prometheus.Registerer { return m.reg }

// ObserveRequest counts one HTTP request.
func (m *Metrics) ObserveRequest(route, method string, code int, d time.Duration) {
	m.latency.Observe(d.Seconds())
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete:
	default:
		m.requests.WithLabelValues(route, method, codeString(code)).Inc()
		return
	}
	k := reqKey{route, method, code}
	if c, ok := m.reqCounters.Load(k); ok {
		c.(prometheus.Counter).Inc()
		return
	}
	c := m.requests.WithLabelValues(route, method, codeString(code))
	m.reqCounters.Store(k, c)
	c.Inc()
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

// observeIndex records the latency of one dedup index operation begun at
// start.
func (m *Metrics) observeIndex(op string, start time.Time) {
	d := time.Since(start).Seconds()
	if o, ok := m.indexObs.Load(op); ok {
		o.(prometheus.Observer).Observe(d)
		return
	}
	o := m.indexOps.WithLabelValues(op)
	m.indexObs.Store(op, o)
	o.Observe(d)
}

// ObserveSweep counts sweep results by class ("unchanged", "changed", "error", ...).
func (m *Metrics) ObserveSweep(sweep, class string, n int64) {
	m.sweeps.WithLabelValues(sweep, class).Add(float64(n))
}

// connState counts the connections of a listener (http.Server.ConnState).
func (m *Metrics) connState(listener string) func(net.Conn, http.ConnState) {
	open, total := m.conns.WithLabelValues(listener), m.connsTotal.WithLabelValues(listener)
	return func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			open.Inc()
			total.Inc()
		case http.StateClosed, http.StateHijacked:
			open.Dec()
		}
	}
}

// handler serves the exposition of every registered metric, in the format
// the scraper asks for (text or OpenMetrics, gzip if accepted).
func (m *Metrics) handler(errorLog promhttp.Logger) http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorLog: errorLog, ErrorHandling: promhttp.ContinueOnError,
		EnableOpenMetrics: true, Registry: m.reg})
}
