// Package promtext writes metrics in the Prometheus text exposition format
// (version 0.0.4) without a client library: label escaping, float
// formatting and a lock-free cumulative histogram, shared by the sidecar's
// /metrics and the packages whose counters it exposes (aggregate).
package promtext
