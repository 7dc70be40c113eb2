package io.polylock.spring.boot;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * {@code polylock.*}: the backend's URL. Another key under {@code polylock.} fails the application's start, as an
 * unknown URL option does.
 */
@ConfigurationProperties(prefix = "polylock", ignoreUnknownFields = false)
public class PolylockProperties {
    /**
     * The backend, as {@code Polylock.connect} takes it ({@code redis://host:6379}, {@code postgres://...},
     * {@code sqlite://path.db}, options in the query string). Unset: {@code POLYLOCK_URL}, else {@code
     * sqlite://polylock.db}.
     */
    private String url;

    public String getUrl() {
        return url;
    }

    public void setUrl(String url) {
        this.url = url;
    }
}
