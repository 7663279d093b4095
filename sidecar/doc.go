// Package sidecar is the `wayside serve` daemon: Wayside's dedup index, CDX
// endpoint, WARC ingest, live MementoMap and fixity sweeps for crawlers not
// written in Go (Heritrix above all), over a Unix socket or loopback HTTP.
package sidecar
