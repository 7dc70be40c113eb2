package polylock

// Metrics (issue 23): the C library's snapshot in the core's one JSON shape, decoded into
// Go structs (the field names are the JSON's), and the Prometheus text.

// #include "polylock.h"
import "C"

import (
	"encoding/json"
	"runtime"
)

// MetricsSnapshot is polylock's counts at one moment: per (backend, lock kind) series and
// per backend connection counts.
type MetricsSnapshot struct {
	// BucketsLeSeconds are the histograms' bucket bounds; each histogram has one count per
	// bound and a last one for observations above the last bound.
	BucketsLeSeconds []float64        `json:"buckets_le_seconds"`
	Series           []SeriesMetrics  `json:"series"`
	Backends         []BackendMetrics `json:"backends"`
}

// SeriesMetrics is the counts of one backend (URL scheme) and lock kind.
type SeriesMetrics struct {
	Backend string `json:"backend"`
	Kind    string `json:"kind"`
	// Acquires by outcome: "acquired", "reentered", "timeout", "error", "cancelled".
	Acquires        map[string]uint64 `json:"acquires"`
	AcquireWait     Histogram         `json:"acquire_wait"`
	HoldTime        Histogram         `json:"hold_time"`
	Releases        uint64            `json:"releases"`
	Renewals        uint64            `json:"renewals"`
	RenewalFailures uint64            `json:"renewal_failures"`
	RenewalLateness Histogram         `json:"renewal_lateness"`
	// Lost holds by reason ("lease_expired", "taken", ...).
	Lost map[string]uint64 `json:"lost"`
	// Errors by kind ("CONNECTION", "BACKEND", ...).
	Errors map[string]uint64 `json:"errors"`
}

// Histogram is a distribution in seconds: Buckets holds one count per bound of
// MetricsSnapshot.BucketsLeSeconds (per bucket, not cumulative) and one above the last.
type Histogram struct {
	Count      uint64   `json:"count"`
	SumSeconds float64  `json:"sum_seconds"`
	Buckets    []uint64 `json:"buckets"`
}

// BackendMetrics is the connection counts of one backend (URL scheme).
type BackendMetrics struct {
	Backend         string `json:"backend"`
	Connects        uint64 `json:"connects"`
	ConnectFailures uint64 `json:"connect_failures"`
	Reconnects      uint64 `json:"reconnects"`
	Failovers       uint64 `json:"failovers"`
}

// SeriesOf is the series of backend and kind, nil if there is none yet.
func (m *MetricsSnapshot) SeriesOf(backend, kind string) *SeriesMetrics {
	for i := range m.Series {
		if m.Series[i].Backend == backend && m.Series[i].Kind == kind {
			return &m.Series[i]
		}
	}
	return nil
}

// BackendOf is the connection counts of backend, nil if there are none yet.
func (m *MetricsSnapshot) BackendOf(backend string) *BackendMetrics {
	for i := range m.Backends {
		if m.Backends[i].Backend == backend {
			return &m.Backends[i]
		}
	}
	return nil
}

// decodeMetrics reads the JSON the C library handed over (and frees it).
func decodeMetrics(bytes *C.polylock_bytes) (*MetricsSnapshot, error) {
	text := goBytes(bytes)
	snapshot := &MetricsSnapshot{}
	if err := json.Unmarshal(text, snapshot); err != nil {
		return nil, errorOf(ErrInternal, "the metrics JSON could not be read: "+err.Error())
	}
	return snapshot, nil
}

// Metrics is the process's counts: every client so far, summed per backend and lock kind.
func Metrics() (*MetricsSnapshot, error) {
	var bytes C.polylock_bytes
	if err := call(func() C.polylock_status { return C.polylock_metrics_json(&bytes) }); err != nil {
		return nil, err
	}
	return decodeMetrics(&bytes)
}

// Metrics is this client's own counts (its backend only). ErrConnection once closed.
func (c *Client) Metrics() (*MetricsSnapshot, error) {
	var bytes C.polylock_bytes
	err := c.use(func(client *C.polylock_client) error {
		return call(func() C.polylock_status { return C.polylock_client_metrics_json(client, &bytes) })
	})
	if err != nil {
		return nil, err
	}
	return decodeMetrics(&bytes)
}

// PrometheusText is the process's counts in Prometheus' text exposition format (0.0.4),
// for a /metrics handler of the program's own.
func PrometheusText() (string, error) {
	var bytes C.polylock_bytes
	if err := call(func() C.polylock_status { return C.polylock_prometheus_text(&bytes) }); err != nil {
		return "", err
	}
	return string(goBytes(&bytes)), nil
}

// SetMetricsEnabled turns the counting of operations on or off for the whole process (on
// by default); the counts so far stay readable.
func SetMetricsEnabled(enabled bool) {
	C.polylock_set_metrics_enabled(C.bool(enabled))
	runtime.KeepAlive(enabled)
}
