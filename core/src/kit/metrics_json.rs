//! A metrics [`Snapshot`] as one JSON document, the shape every binding hands out (Python and
//! Ruby as a dict/hash, Node as an object, Java, C and Go as the text or a typed copy), so the
//! field names are the same in every language and written once.
//!
//! ```json
//! {"buckets_le_seconds": [0.0001, ..., 60.0],
//!  "series": [{"backend": "redis", "kind": "reentrant",
//!              "acquires": {"acquired": 3, "reentered": 0, "timeout": 1, "error": 0, "cancelled": 0},
//!              "acquire_wait": {"count": 3, "sum_seconds": 0.004, "buckets": [0, 1, ...]},
//!              "hold_time": {...}, "releases": 3, "renewals": 0, "renewal_failures": 0,
//!              "renewal_lateness": {...}, "lost": {"lease_expired": 0, ...}, "errors": {...}}],
//!  "backends": [{"backend": "redis", "connects": 1, "connect_failures": 0, "reconnects": 0, "failovers": 0}]}
//! ```
//!
//! A histogram's `buckets` has one count per bound of `buckets_le_seconds` (the observations
//! at most that bound and above the one before) and a last one for those above a minute:
//! per bucket, not cumulative as Prometheus writes them.

use serde_json::{json, Map, Value};

use crate::metrics::{HistogramSnapshot, Snapshot, BUCKETS_SECONDS};

/// The process's counts ([`crate::metrics::snapshot`]) as JSON text.
pub fn process_metrics_json() -> String {
    to_json(&crate::metrics::snapshot())
}

/// `snapshot` as JSON text, in the shape the module documentation shows.
pub fn to_json(snapshot: &Snapshot) -> String {
    to_value(snapshot).to_string()
}

fn to_value(snapshot: &Snapshot) -> Value {
    let series: Vec<Value> = snapshot
        .series
        .iter()
        .map(|s| {
            json!({
                "backend": s.backend,
                "kind": s.kind,
                "acquires": counts(&s.acquires),
                "acquire_wait": histogram(&s.acquire_wait),
                "hold_time": histogram(&s.hold_time),
                "releases": s.releases,
                "renewals": s.renewals,
                "renewal_failures": s.renewal_failures,
                "renewal_lateness": histogram(&s.renewal_lateness),
                "lost": counts(&s.lost),
                "errors": counts(&s.errors),
            })
        })
        .collect();
    let backends: Vec<Value> = snapshot
        .backends
        .iter()
        .map(|b| {
            json!({
                "backend": b.backend,
                "connects": b.connects,
                "connect_failures": b.connect_failures,
                "reconnects": b.reconnects,
                "failovers": b.failovers,
            })
        })
        .collect();
    json!({ "buckets_le_seconds": BUCKETS_SECONDS, "series": series, "backends": backends })
}

fn counts(pairs: &[(String, u64)]) -> Value {
    Value::Object(pairs.iter().map(|(label, n)| (label.clone(), Value::from(*n))).collect::<Map<_, _>>())
}

fn histogram(h: &HistogramSnapshot) -> Value {
    json!({ "count": h.count, "sum_seconds": h.sum_seconds, "buckets": h.buckets })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{BackendSnapshot, SeriesSnapshot};

    #[test]
    fn every_field_is_written_under_its_documented_name() {
        let snapshot = Snapshot {
            series: vec![SeriesSnapshot {
                backend: "redis".into(),
                kind: "fair".into(),
                acquires: vec![("acquired".into(), 2), ("timeout".into(), 1)],
                acquire_wait: HistogramSnapshot { buckets: vec![0; 19], count: 2, sum_seconds: 0.5 },
                releases: 2,
                lost: vec![("taken".into(), 1)],
                ..SeriesSnapshot::default()
            }],
            backends: vec![BackendSnapshot { backend: "redis".into(), connects: 1, ..BackendSnapshot::default() }],
        };
        let v: Value = serde_json::from_str(&to_json(&snapshot)).unwrap();
        assert_eq!(v["buckets_le_seconds"].as_array().unwrap().len(), BUCKETS_SECONDS.len());
        let s = &v["series"][0];
        assert_eq!((s["backend"].as_str(), s["kind"].as_str()), (Some("redis"), Some("fair")));
        assert_eq!(s["acquires"]["acquired"], 2);
        assert_eq!(s["acquires"]["timeout"], 1);
        assert_eq!(s["acquire_wait"]["count"], 2);
        assert_eq!(s["acquire_wait"]["sum_seconds"], 0.5);
        assert_eq!(s["acquire_wait"]["buckets"].as_array().unwrap().len(), 19);
        assert_eq!(s["lost"]["taken"], 1);
        assert_eq!(s["releases"], 2);
        assert_eq!(v["backends"][0]["connects"], 1);
        assert_eq!(v["backends"][0]["failovers"], 0);
    }
}
