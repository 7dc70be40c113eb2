package io.polylock;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The stores the suite runs against: mem:// and an SQLite file always, and every real server whose
 * POLYLOCK_TEST_*_URL is set (run-tests.sh starts Redis and sets its URL). Each backend gets a namespace of its
 * own, so runs and tests never see each other's locks on a shared server.
 */
final class Backends {
    private static final AtomicLong NEXT = new AtomicLong();
    private static final String[] SERVER_VARIABLES = {
        "POLYLOCK_TEST_REDIS_URL",
        "POLYLOCK_TEST_REDIS_CLUSTER_URL",
        "POLYLOCK_TEST_REDIS_SENTINEL_URL",
        "POLYLOCK_TEST_REDIS_TLS_URL",
        "POLYLOCK_TEST_ETCD_URL",
        "POLYLOCK_TEST_ZOOKEEPER_URL",
        "POLYLOCK_TEST_POSTGRES_URL",
        "POLYLOCK_TEST_MARIADB_URL",
    };

    private Backends() {}

    /** One backend: a URL with a private namespace. */
    static final class Backend {
        final String label;
        final String url;

        Backend(String label, String url) {
            this.label = label;
            this.url = url;
        }

        PolylockClient connect() {
            return Polylock.connect(url);
        }

        boolean isRedis() {
            return url.startsWith("redis");
        }

        /**
         * Whether the store keeps each hold's own lease, so remainTimeToLive reads it: Redis, SQLite and mem do.
         * ZooKeeper nodes and SQL session locks have no expiry in the store (-1, as Redisson says of a key without
         * one); etcd keeps the holding session's lease, not the hold's.
         */
        boolean storeKeepsTheHoldsLease() {
            return isRedis() || url.startsWith("sqlite") || url.startsWith("mem");
        }

        /** SQL session locks: only the session holding one can release it, so forceUnlock is refused. */
        boolean isSqlSession() {
            return url.startsWith("postgres") || url.startsWith("mysql");
        }

        @Override
        public String toString() {
            return label;
        }
    }

    static List<Backend> all() {
        String run = ProcessHandle.current().pid() + "-" + NEXT.incrementAndGet();
        List<Backend> backends = new ArrayList<>();
        backends.add(new Backend("mem", "mem://jvm-" + run));
        backends.add(new Backend("sqlite", "sqlite://" + tempDir().resolve("locks.db")));
        for (String variable : SERVER_VARIABLES) {
            String url = System.getenv(variable);
            if (url != null && !url.isEmpty() && isInThisBuild(url)) {
                String label = variable.replace("POLYLOCK_TEST_", "").replace("_URL", "").toLowerCase();
                backends.add(new Backend(label, withOption(url, "namespace=jvm-" + run)));
            }
        }
        return backends;
    }

    /**
     * Whether the core of this build has the URL's backend. A server may run (tests/services starts them all) before
     * its backend has landed in the core; such a URL is left out, with a note. Any other failure to connect is the
     * test's to report.
     */
    private static boolean isInThisBuild(String url) {
        return IN_THIS_BUILD.computeIfAbsent(url, Backends::probe);
    }

    private static final Map<String, Boolean> IN_THIS_BUILD = new ConcurrentHashMap<>();

    private static boolean probe(String url) {
        try (PolylockClient probe = Polylock.connect(url)) {
            return true;
        } catch (PolylockException e) {
            if (e.getCode() == ErrorCode.INVALID_ARGUMENT && e.getMessage().contains("not part of this build")) {
                System.err.println("polylock tests: leaving out " + url.replaceAll("//[^@/]*@", "//***@") + ": "
                        + e.getMessage());
                return false;
            }
            return true;
        }
    }

    static String withOption(String url, String option) {
        return url + (url.contains("?") ? "&" : "?") + option;
    }

    static String redisUrl() {
        return System.getenv("POLYLOCK_TEST_REDIS_URL");
    }

    /** A lock name no other test or run uses. */
    static String uniqueName(String base) {
        return base + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
    }

    private static Path tempDir() {
        try {
            Path dir = Files.createTempDirectory("polylock-jvm-test");
            dir.toFile().deleteOnExit();
            return dir;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
