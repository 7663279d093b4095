package aggregate

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// newLatency returns the upstream latency histogram of one archive.
func newLatency(archive string) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: "wayside_aggregate_upstream_duration_seconds",
		Help: "Latency of requests to upstream archives.", Buckets: latencyBounds, ConstLabels: prometheus.Labels{"archive": archive}})
}

// latency is a snapshot of a latency histogram.
type latency struct {
	count   uint64
	sum     float64
	buckets []*dto.Bucket // cumulative
}

func latencyOf(h prometheus.Histogram) latency {
	var m dto.Metric
	if err := h.Write(&m); err != nil || m.Histogram == nil {
		return latency{}
	}
	return latency{count: m.Histogram.GetSampleCount(), sum: m.Histogram.GetSampleSum(), buckets: m.Histogram.Bucket}
}

// quantile returns the upper bound of the bucket holding the q-quantile
// (0 < q <= 1): an upper estimate, +Inf past the last bound, NaN without
// observations.
func (l latency) quantile(q float64) float64 {
	if l.count == 0 {
		return math.NaN()
	}
	rank := uint64(math.Ceil(q * float64(l.count)))
	for _, b := range l.buckets {
		if b.GetCumulativeCount() >= rank {
			return b.GetUpperBound()
		}
	}
	return math.Inf(1)
}

// The aggregator's metrics: per archive (label archive) the lookups asked,
// avoided, answered with and without mementos, failed and timed out, the
// map fetches and failures, the map's state and the upstream latency; the
// aggregated lookups and partial answers. Register the Aggregator (a
// prometheus.Collector) with the daemon's registry.
var (
	archiveCounters = []struct {
		desc *prometheus.Desc
		v    func(*archiveStats) int64
	}{
		{archiveDesc("wayside_aggregate_requests_total", "Lookups an upstream archive was asked."), func(s *archiveStats) int64 { return s.requests.Load() }},
		{archiveDesc("wayside_aggregate_avoided_total", "Lookups not sent to an archive because its MementoMap said it holds nothing of the URI-R."), func(s *archiveStats) int64 { return s.avoided.Load() }},
		{archiveDesc("wayside_aggregate_hits_total", "Lookups an archive answered with mementos."), func(s *archiveStats) int64 { return s.hits.Load() }},
		{archiveDesc("wayside_aggregate_misses_total", "Lookups an archive answered without mementos."), func(s *archiveStats) int64 { return s.misses.Load() }},
		{archiveDesc("wayside_aggregate_errors_total", "Lookups an archive failed (timeouts included)."), func(s *archiveStats) int64 { return s.errors.Load() }},
		{archiveDesc("wayside_aggregate_timeouts_total", "Lookups an archive did not answer in time."), func(s *archiveStats) int64 { return s.timeouts.Load() }},
		{archiveDesc("wayside_aggregate_map_fetches_total", "MementoMap fetches."), func(s *archiveStats) int64 { return s.mapFetches.Load() }},
		{archiveDesc("wayside_aggregate_map_failures_total", "MementoMap fetches or parses that failed (the archive is then asked for everything)."), func(s *archiveStats) int64 { return s.mapFailures.Load() }},
	}
	mapLoadedDesc = archiveDesc("wayside_aggregate_map_loaded", "Whether the archive's MementoMap is loaded and routes lookups (0: the archive is asked for everything).")
	mapLinesDesc  = archiveDesc("wayside_aggregate_map_lines", "Data lines of the archive's loaded MementoMap.")
	lookupsDesc   = prometheus.NewDesc("wayside_aggregate_lookups_total", "Aggregated TimeMap and TimeGate requests answered.", nil, nil)
	partialDesc   = prometheus.NewDesc("wayside_aggregate_partial_total", "Aggregated answers missing an asked archive (marked partial).", nil, nil)
)

func archiveDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, []string{"archive"}, nil)
}

// Describe implements prometheus.Collector.
func (a *Aggregator) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(a, ch) }

// Collect implements prometheus.Collector.
func (a *Aggregator) Collect(ch chan<- prometheus.Metric) {
	for _, up := range a.ups {
		name := up.cfg.Name
		for _, c := range archiveCounters {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(c.v(&up.stats)), name)
		}
		state, _, lines, _, _ := up.amap.status()
		loaded := 0.0
		if state == mapLoaded {
			loaded = 1
		}
		ch <- prometheus.MustNewConstMetric(mapLoadedDesc, prometheus.GaugeValue, loaded, name)
		ch <- prometheus.MustNewConstMetric(mapLinesDesc, prometheus.GaugeValue, float64(lines), name)
		up.stats.latency.Collect(ch)
	}
	ch <- prometheus.MustNewConstMetric(lookupsDesc, prometheus.CounterValue, float64(a.lookups.Load()))
	ch <- prometheus.MustNewConstMetric(partialDesc, prometheus.CounterValue, float64(a.partial.Load()))
}
