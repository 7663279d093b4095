package sidecar

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// stateCollector exposes, at scrape time, what the daemon's parts report
// about themselves: the consumers of the capture spine (Fanout stats), the
// live MementoMap, the ingester's lag and pause, the tailed crawl.log, the
// capture index, characterization and running fixity sweeps.
type stateCollector struct {
	s *Server

	pendingKeys, consCaptures, consBehind, consQueued, consResyncs *prometheus.Desc
	clogLines, clogDups, clogBytes                                 *prometheus.Desc
	lagBytes, lagSeconds, ingestPaused                             *prometheus.Desc
	captures, capRevisits, capUnresolved, capDisk                  *prometheus.Desc
	charRecords, charBytes, charFailed, charQueued                 *prometheus.Desc
	sweepsRunning, problems                                        *prometheus.Desc
}

func newStateCollector(s *Server) *stateCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &stateCollector{s: s,
		pendingKeys:   d("wayside_mementomap_pending_keys", "MementoMap keys held in memory, not yet merged into the map file."),
		consCaptures:  d("wayside_consumer_captures_total", "Captures handed to each consumer of the capture spine, by outcome.", "consumer", "outcome"),
		consBehind:    d("wayside_consumer_behind", "Whether a consumer missed captures it has not caught up on yet.", "consumer"),
		consQueued:    d("wayside_consumer_queued", "Captures waiting in each consumer's queue.", "consumer"),
		consResyncs:   d("wayside_consumer_resyncs_total", "Times each consumer caught up after dropped captures.", "consumer"),
		clogLines:     d("wayside_crawllog_lines_total", "Heritrix crawl.log lines by fetch status.", "status"),
		clogDups:      d("wayside_crawllog_duplicates_total", "crawl.log lines Heritrix annotated as duplicates."),
		clogBytes:     d("wayside_crawllog_bytes_total", "Bytes Heritrix reports fetched in crawl.log."),
		lagBytes:      d("wayside_ingest_lag_bytes", "Bytes in watched WARC files not yet ingested."),
		lagSeconds:    d("wayside_ingest_lag_seconds", "Age of the oldest WARC bytes not yet ingested."),
		ingestPaused:  d("wayside_ingest_paused", "Whether ingest is paused because a disk it writes to is (nearly) full."),
		captures:      d("wayside_captures", "Captures in the capture index, by collection.", "collection"),
		capRevisits:   d("wayside_capture_revisits", "Revisits in the capture index, by collection.", "collection"),
		capUnresolved: d("wayside_capture_unresolved", "Revisits whose original the capture index does not hold, by collection.", "collection"),
		capDisk:       d("wayside_capture_index_disk_bytes", "Size of the capture index on disk."),
		charRecords:   d("wayside_characterize_records_total", "Captures characterized and stored."),
		charBytes:     d("wayside_characterize_bytes_total", "Payload bytes of the captures characterized."),
		charFailed:    d("wayside_characterize_failed_total", "Captures that could not be characterized (unreadable or not stored)."),
		charQueued:    d("wayside_characterize_queued", "Captures waiting to be characterized."),
		sweepsRunning: d("wayside_sweeps_running", "Fixity sweeps running now."),
		problems:      d("wayside_problems", "Things the daemon reports it cannot do (see wayside status)."),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pendingKeys, c.consCaptures, c.consBehind, c.consQueued, c.consResyncs,
		c.clogLines, c.clogDups, c.clogBytes, c.lagBytes, c.lagSeconds, c.ingestPaused,
		c.captures, c.capRevisits, c.capUnresolved, c.capDisk, c.charRecords, c.charBytes, c.charFailed, c.charQueued,
		c.sweepsRunning, c.problems} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	emit := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
	}
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	if s.cons.Live != nil {
		emit(c.pendingKeys, gauge, float64(s.cons.Live.Pending()))
	}
	for _, st := range s.cons.Stats() {
		emit(c.consCaptures, counter, float64(st.Delivered), st.Name, "delivered")
		emit(c.consCaptures, counter, float64(st.Failed), st.Name, "failed")
		emit(c.consCaptures, counter, float64(st.Dropped), st.Name, "dropped")
		emit(c.consBehind, gauge, b2f(st.Behind), st.Name)
		emit(c.consQueued, gauge, float64(st.Queued), st.Name)
		emit(c.consResyncs, counter, float64(st.Resyncs), st.Name)
	}
	if cl := s.ing().CrawlLog(); cl != nil {
		for status, n := range cl.ByStatus {
			emit(c.clogLines, counter, float64(n), status)
		}
		emit(c.clogDups, counter, float64(cl.Duplicates))
		emit(c.clogBytes, counter, float64(cl.Bytes))
	}
	ist := s.ing().Status() // refreshes the lag counters
	emit(c.lagBytes, gauge, float64(s.metrics.Ingest.LagBytes.Load()))
	emit(c.lagSeconds, gauge, time.Duration(s.metrics.Ingest.LagNanos.Load()).Seconds())
	emit(c.ingestPaused, gauge, b2f(ist.Paused != ""))
	if s.acc() != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := s.acc().idx.Stats(ctx)
		cancel()
		if err == nil {
			for _, sc := range st.Scopes {
				emit(c.captures, gauge, float64(sc.Captures), sc.Scope)
				emit(c.capRevisits, gauge, float64(sc.Revisits), sc.Scope)
				emit(c.capUnresolved, gauge, float64(sc.Unresolved), sc.Scope)
			}
			emit(c.capDisk, gauge, float64(st.DiskBytes))
		}
	}
	if ch2 := s.cons.Characterizer; ch2 != nil {
		st := ch2.Stats()
		emit(c.charRecords, counter, float64(st.Records))
		emit(c.charBytes, counter, float64(st.Bytes))
		emit(c.charFailed, counter, float64(st.Failed))
		emit(c.charQueued, gauge, float64(st.Queued))
	}
	running := 0
	for _, sw := range s.fix().Sweeps() {
		if sw.Running {
			running++
		}
	}
	emit(c.sweepsRunning, gauge, float64(running))
	emit(c.problems, gauge, float64(len(s.problems())))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
