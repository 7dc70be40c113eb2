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

    static String defaultUrl() {
        String url = System.getenv("POLYLOCK_URL");
        return url != null && !url.isEmpty() ? url : "sqlite://polylock.db";
    }
}
