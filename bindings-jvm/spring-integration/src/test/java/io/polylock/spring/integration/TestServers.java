package io.polylock.spring.integration;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.util.UUID;

/**
 * The stores these tests use: an SQLite file always, and the servers of tests/services when POLYLOCK_TEST_SERVERS=1
 * (then a missing POLYLOCK_TEST_*_URL fails the test; off, the test is skipped).
 */
final class TestServers {
    private TestServers() {}

    /** A short random suffix: other runs share the servers. */
    static String unique() {
        return UUID.randomUUID().toString().substring(0, 8);
    }

    static String sqliteUrl() {
        try {
            return "sqlite://" + Files.createTempDirectory("polylock-spring-integration").resolve("locks.db");
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The server's URL from {@code POLYLOCK_TEST_<name>_URL}. */
    static String server(String name) {
        String url = System.getenv("POLYLOCK_TEST_" + name + "_URL");
        boolean on = "1".equals(System.getenv("POLYLOCK_TEST_SERVERS"));
        if (url == null || url.isEmpty()) {
            if (on) {
                fail("POLYLOCK_TEST_SERVERS=1 but POLYLOCK_TEST_" + name + "_URL is not set");
            }
            assumeTrue(false, "no " + name + " server (POLYLOCK_TEST_" + name + "_URL)");
        }
        return url;
    }

    /** {@code url} with one more query option. */
    static String withOption(String url, String option) {
        return url + (url.contains("?") ? "&" : "?") + option;
    }
}
