package io.polylock;

import java.util.List;
import java.util.Objects;

/**
 * Entry point: {@code try (PolylockClient client = Polylock.connect("redis://127.0.0.1:6379")) { ... }}.
 *
 * <p>The backend is chosen by the URL scheme: {@code mem://}, {@code sqlite://path.db}, {@code redis://},
 * {@code rediss://}, {@code redis+cluster://}, {@code redis+sentinel://}, and every backend that lands in the
 * core later, with no change here.
 */
public final class Polylock {
    private Polylock() {}

    /** polylock's version, the same in every language (the workspace's, in the root Cargo.toml). */
    public static final String VERSION = "0.1.0";

    /** Connect to the backend {@code url} names. Throws {@link PolylockException} if it cannot. */
    public static PolylockClient connect(String url) {
        Objects.requireNonNull(url, "url");
        return new PolylockClient(url);
    }

    /** Connect to {@code $POLYLOCK_URL}, else to {@code sqlite://polylock.db}. */
    public static PolylockClient connect() {
        return connect(defaultUrl());
    }

    /** Connect with a {@link Config}, as {@code Redisson.create(config)} does. */
    public static PolylockClient create(Config config) {
        Objects.requireNonNull(config, "config");
        return connect(config.toUrl());
    }

    /**
     * A RedLock named {@code name} over the independent Redis servers {@code servers} (each {@code host:port} or
     * {@code redis://[user:password@]host:port}, one set of credentials for all), on a connection of its own that
     * {@link RedLock#close()} closes. RedLock has no fencing tokens: {@link RedLock#getToken()} is always null.
     */
    public static RedLock redlock(List<String> servers, String name) {
        Objects.requireNonNull(name, "name");
        return new RedLock(connect(redlockUrl(servers)), name);
    }

    /** The {@code redlock://} URL of {@code servers}, for {@link #connect(String)} (one client, many RedLocks). */
    public static String redlockUrl(List<String> servers) {
        return RedLockUrl.of(servers);
    }

    /**
     * Hand the core's log records to SLF4J at {@code level} and above from now on: {@code off}, {@code error}, {@code
     * warn}, {@code info}, {@code debug} or {@code trace} (any case; {@code warning} too). Throws {@link
     * PolylockException} with {@link ErrorCode#INVALID_ARGUMENT} for another name, leaving the level as it was.
     *
     * <p>At load the level is the one {@code POLYLOCK_LOG} names (or {@code debug} when {@code DEBUG} lists {@code
     * polylock}), else the most detailed one SLF4J enables on logger {@code polylock}, but at least {@code warn}. Records
     * below the level cost nothing: they are never made. Each record goes to the logger of its Rust module under {@code
     * polylock} ({@code polylock.engine.acquire}...), with the event's fields as key-value pairs.
     */
    public static void setLogLevel(String level) {
        Objects.requireNonNull(level, "level");
        NativeBridge.logSetLevel(level);
    }

    /** The level the core's records are handed to SLF4J at: {@code off}, {@code error}, {@code warn}, ... */
    public static String getLogLevel() {
        return NativeBridge.logLevel();
    }

    /** The process's metrics: every client's counts, summed per backend scheme and lock kind. */
    public static Metrics metrics() {
        return new Metrics(NativeBridge.metricsJson());
    }

    /** The process's metrics in Prometheus' text format 0.0.4, to serve on a {@code /metrics} endpoint. */
    public static String prometheusText() {
        return NativeBridge.prometheusText();
    }

    /** Count (the default) or stop counting; counts already made are kept. Process-wide. */
    public static void setMetricsEnabled(boolean enabled) {
        NativeBridge.setMetricsEnabled(enabled);
    }

    public static boolean isMetricsEnabled() {
        return NativeBridge.metricsEnabled();
    }

    static String defaultUrl() {
        String url = System.getenv("POLYLOCK_URL");
        return url != null && !url.isEmpty() ? url : "sqlite://polylock.db";
    }
}
