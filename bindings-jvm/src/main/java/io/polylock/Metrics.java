package io.polylock;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A metrics snapshot: {@link Polylock#metrics()} for the process (every client summed by label), {@link
 * PolylockClient#getMetrics()} for one client. It is the one JSON shape every polylock binding hands out ({@link
 * #toJson()}), read into a typed view: a {@link Series} per backend scheme and lock kind, a {@link BackendCounts} per
 * backend, and the histogram bounds. {@link #asMap()} gives the same document as plain maps and lists. The counters
 * are the Prometheus ones of README's "Operating polylock" ({@link Polylock#prometheusText()}).
 */
public final class Metrics {
    private final String json;
    private final Map<String, Object> map;
    private final double[] bucketsLeSeconds;
    private final List<Series> series;
    private final List<BackendCounts> backends;

    Metrics(String json) {
        this.json = json;
        this.map = asObject(Json.parse(json));
        List<Object> bounds = asList(map.get("buckets_le_seconds"));
        this.bucketsLeSeconds = new double[bounds.size()];
        for (int i = 0; i < bounds.size(); i++) {
            bucketsLeSeconds[i] = ((Number) bounds.get(i)).doubleValue();
        }
        List<Series> series = new ArrayList<>();
        for (Object s : asList(map.get("series"))) {
            series.add(new Series(asObject(s)));
        }
        this.series = Collections.unmodifiableList(series);
        List<BackendCounts> backends = new ArrayList<>();
        for (Object b : asList(map.get("backends"))) {
            backends.add(new BackendCounts(asObject(b)));
        }
        this.backends = Collections.unmodifiableList(backends);
    }

    /** The snapshot as polylock's one JSON document (the same text in every language). */
    public String toJson() {
        return json;
    }

    /** The document as unmodifiable maps ({@code String} keys), lists, {@code Long}s, {@code Double}s and strings. */
    public Map<String, Object> asMap() {
        return map;
    }

    /** The histograms' upper bounds in seconds, 0.1 ms to 60 s; each histogram has one more bucket, above a minute. */
    public double[] getBucketsLeSeconds() {
        return bucketsLeSeconds.clone();
    }

    /** A series per backend scheme and lock kind that has counted something. */
    public List<Series> getSeries() {
        return series;
    }

    /** The series of {@code backend} (a URL scheme: {@code redis}, {@code sqlite}...) and {@code kind}, or null. */
    public Series getSeries(String backend, String kind) {
        for (Series s : series) {
            if (s.backend.equals(backend) && s.kind.equals(kind)) {
                return s;
            }
        }
        return null;
    }

    /** Connection counts per backend scheme. */
    public List<BackendCounts> getBackends() {
        return backends;
    }

    /** The connection counts of {@code backend}, or null. */
    public BackendCounts getBackend(String backend) {
        for (BackendCounts b : backends) {
            if (b.backend.equals(backend)) {
                return b;
            }
        }
        return null;
    }

    /** Acquisitions of {@code backend} and {@code kind} that ended in {@code outcome} ({@code acquired}...); 0 if none. */
    public long getAcquires(String backend, String kind, String outcome) {
        Series s = getSeries(backend, kind);
        return s == null ? 0 : s.getAcquires().getOrDefault(outcome, 0L);
    }

    /** Releases of {@code backend} and {@code kind}; 0 if none. */
    public long getReleases(String backend, String kind) {
        Series s = getSeries(backend, kind);
        return s == null ? 0 : s.getReleases();
    }

    @Override
    public String toString() {
        return json;
    }

    /** The counts of one backend scheme and lock kind. */
    public static final class Series {
        private final String backend;
        private final String kind;
        private final Map<String, Long> acquires;
        private final Histogram acquireWait;
        private final Histogram holdTime;
        private final long releases;
        private final long renewals;
        private final long renewalFailures;
        private final Histogram renewalLateness;
        private final Map<String, Long> lost;
        private final Map<String, Long> errors;

        Series(Map<String, Object> s) {
            backend = (String) s.get("backend");
            kind = (String) s.get("kind");
            acquires = counts(s.get("acquires"));
            acquireWait = new Histogram(asObject(s.get("acquire_wait")));
            holdTime = new Histogram(asObject(s.get("hold_time")));
            releases = count(s.get("releases"));
            renewals = count(s.get("renewals"));
            renewalFailures = count(s.get("renewal_failures"));
            renewalLateness = new Histogram(asObject(s.get("renewal_lateness")));
            lost = counts(s.get("lost"));
            errors = counts(s.get("errors"));
        }

        /** The URL scheme: {@code redis}, {@code sqlite}, {@code etcd}... */
        public String getBackend() {
            return backend;
        }

        /** {@code reentrant}, {@code fair}, {@code token}, {@code lease}, {@code read}, {@code write}, {@code semaphore}... */
        public String getKind() {
            return kind;
        }

        /** Acquisitions by outcome: {@code acquired}, {@code reentered}, {@code timeout}, {@code error}, {@code cancelled}. */
        public Map<String, Long> getAcquires() {
            return acquires;
        }

        /** How long granted acquisitions waited. */
        public Histogram getAcquireWait() {
            return acquireWait;
        }

        /** Grant to release. */
        public Histogram getHoldTime() {
            return holdTime;
        }

        /** Holds given back (lost or not). */
        public long getReleases() {
            return releases;
        }

        public long getRenewals() {
            return renewals;
        }

        public long getRenewalFailures() {
            return renewalFailures;
        }

        /** How long after its due time each watchdog renewal went out. */
        public Histogram getRenewalLateness() {
            return renewalLateness;
        }

        /** Holds lost, by reason: {@code lease_expired}, {@code taken}, {@code renewal_failed}, {@code session_ended}... */
        public Map<String, Long> getLost() {
            return lost;
        }

        /** Errors ending acquire, renew and release calls, by error kind ({@code CONNECTION}, {@code BACKEND}...). */
        public Map<String, Long> getErrors() {
            return errors;
        }
    }

    /** A histogram: per-bucket counts (not cumulative) against {@link #getBucketsLeSeconds()}, plus one above. */
    public static final class Histogram {
        private final long count;
        private final double sumSeconds;
        private final long[] buckets;

        Histogram(Map<String, Object> h) {
            count = count(h.get("count"));
            sumSeconds = ((Number) h.get("sum_seconds")).doubleValue();
            List<Object> b = asList(h.get("buckets"));
            buckets = new long[b.size()];
            for (int i = 0; i < buckets.length; i++) {
                buckets[i] = count(b.get(i));
            }
        }

        public long getCount() {
            return count;
        }

        public double getSumSeconds() {
            return sumSeconds;
        }

        public long[] getBuckets() {
            return buckets.clone();
        }
    }

    /** The connection counts of one backend scheme. */
    public static final class BackendCounts {
        private final String backend;
        private final long connects;
        private final long connectFailures;
        private final long reconnects;
        private final long failovers;

        BackendCounts(Map<String, Object> b) {
            backend = (String) b.get("backend");
            connects = count(b.get("connects"));
            connectFailures = count(b.get("connect_failures"));
            reconnects = count(b.get("reconnects"));
            failovers = count(b.get("failovers"));
        }

        public String getBackend() {
            return backend;
        }

        public long getConnects() {
            return connects;
        }

        public long getConnectFailures() {
            return connectFailures;
        }

        public long getReconnects() {
            return reconnects;
        }

        public long getFailovers() {
            return failovers;
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> asObject(Object value) {
        return value instanceof Map ? (Map<String, Object>) value : Collections.emptyMap();
    }

    @SuppressWarnings("unchecked")
    private static List<Object> asList(Object value) {
        return value instanceof List ? (List<Object>) value : Collections.emptyList();
    }

    private static long count(Object value) {
        return value instanceof Number ? ((Number) value).longValue() : 0;
    }

    private static Map<String, Long> counts(Object value) {
        Map<String, Long> out = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : asObject(value).entrySet()) {
            out.put(e.getKey(), count(e.getValue()));
        }
        return Collections.unmodifiableMap(out);
    }
}
