package io.polylock;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * Settings for {@link Polylock#create(Config)}, named as in Redisson's {@code Config} where they exist. Everything
 * here is also expressible in the URL's query string ({@code ?namespace=orders&lease=30s}).
 */
public final class Config {
    private String url;
    private String namespace;
    private long lockWatchdogTimeoutMillis = -1;

    /** The backend URL: {@code sqlite://locks.db}, {@code redis://host:6379}, {@code etcd://...}, ... */
    public Config setUrl(String url) {
        this.url = Objects.requireNonNull(url, "url");
        return this;
    }

    public String getUrl() {
        return url;
    }

    /** Prefix every lock key with {@code <namespace>:}. */
    public Config setNamespace(String namespace) {
        this.namespace = namespace;
        return this;
    }

    public String getNamespace() {
        return namespace;
    }

    /**
     * The lease the watchdog keeps on locks taken without a lease time (Redisson's {@code lockWatchdogTimeout}; default
     * 30 000 ms), renewed every third of it.
     */
    public Config setLockWatchdogTimeout(long millis) {
        if (millis <= 0) {
            throw new PolylockException(ErrorCode.INVALID_ARGUMENT, "lockWatchdogTimeout must be positive, got " + millis);
        }
        this.lockWatchdogTimeoutMillis = millis;
        return this;
    }

    public long getLockWatchdogTimeout() {
        return lockWatchdogTimeoutMillis;
    }

    /** The URL this configuration connects to, options included. */
    String toUrl() {
        String base = url != null ? url : Polylock.defaultUrl();
        StringBuilder built = new StringBuilder(base);
        char separator = base.contains("?") ? '&' : '?';
        if (namespace != null) {
            built.append(separator).append("namespace=").append(URLEncoder.encode(namespace, StandardCharsets.UTF_8));
            separator = '&';
        }
        if (lockWatchdogTimeoutMillis > 0) {
            built.append(separator).append("lease=").append(lockWatchdogTimeoutMillis).append("ms");
        }
        return built.toString();
    }
}
