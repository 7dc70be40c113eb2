package io.polylock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.polylock.testlog.Captured;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * Issue 23 in Java: the core's records in SLF4J (through the tests' own provider, testlog.CapturingProvider, found
 * like any real one), the level switch, and the metrics snapshots, against SQLite files and the Redis of
 * tests/services.
 */
class ObservabilityTest {
    private String levelBefore;

    @BeforeEach
    void remember() {
        levelBefore = Polylock.getLogLevel();
        // SLF4J's side lets everything through (as a logback config with polylock at TRACE would): what reaches
        // the loggers is what polylock's own level hands on.
        Captured.setLevel("polylock", Level.TRACE);
        Captured.clear();
    }

    @AfterEach
    void restore() {
        Captured.failWhen(null);
        Captured.clearLevel("polylock");
        Polylock.setMetricsEnabled(true);
        Polylock.setLogLevel(levelBefore);
    }

    private static String sqliteUrl() throws Exception {
        Path dir = Files.createTempDirectory("polylock-jvm-obs");
        dir.toFile().deleteOnExit();
        return "sqlite://" + dir.resolve("locks.db");
    }

    /** The URL of backend {@code which}: an SQLite file, or the Redis of tests/services. */
    private static String url(String which) throws Exception {
        if (which.equals("sqlite")) {
            return sqliteUrl();
        }
        String redis = Backends.redisUrl();
        assertNotNull(redis, "POLYLOCK_TEST_REDIS_URL is not set (run-tests.sh sets it)");
        return redis;
    }

    private static boolean fromPolylock(Captured.Record r) {
        return r.logger.equals("polylock") || r.logger.startsWith("polylock.");
    }

    /** Waits (a little) for a record {@code which} accepts: a worker may still be handing one on. */
    private static List<Captured.Record> await(Predicate<Captured.Record> which) throws InterruptedException {
        return await(which, 1);
    }

    /** Waits (a little) for {@code count} records {@code which} accepts, and returns all it accepts. */
    private static List<Captured.Record> await(Predicate<Captured.Record> which, int count)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        List<Captured.Record> found = Captured.records(which);
        while (found.size() < count && System.nanoTime() < deadline) {
            Thread.sleep(10);
            found = Captured.records(which);
        }
        return found;
    }

    /** Every record of polylock's loggers, for a failure's message. */
    private static String polylockRecords() {
        return Captured.records(ObservabilityTest::fromPolylock).toString();
    }

    /** Records of polylock's loggers about lock {@code name}. */
    private static Predicate<Captured.Record> about(String name) {
        return r -> fromPolylock(r) && name.equals(r.fields.get("name"));
    }

    /** Take and give back {@code name} once, on a runtime worker (async) and on this thread (blocking). */
    private static void holdOnce(PolylockClient client, String name) throws Exception {
        RLock lock = client.getLock(name);
        lock.lockAsync(7L).get(10, TimeUnit.SECONDS);
        lock.unlockAsync(7L).get(10, TimeUnit.SECONDS);
        lock.lock();
        lock.unlock();
    }

    @ParameterizedTest
    @ValueSource(strings = {"sqlite", "redis"})
    void anOperationLogsToSlf4jUnderPolylockWithTheLockNameAsAField(String backend) throws Exception {
        Polylock.setLogLevel("debug");
        String name = Backends.uniqueName("obs-records");
        try (PolylockClient client = Polylock.connect(url(backend))) {
            holdOnce(client, name);
        }
        List<Captured.Record> acquired = await(about(name).and(r -> "acquire".equals(r.fields.get("op"))), 2);
        List<Captured.Record> released = await(about(name).and(r -> "release".equals(r.fields.get("op"))), 2);
        assertEquals(2, acquired.size(), polylockRecords());
        assertEquals(2, released.size(), polylockRecords());
        for (Captured.Record r : acquired) {
            assertEquals("polylock.engine.acquire", r.logger, r.toString());
            assertEquals(Level.DEBUG, r.level, r.toString());
            assertEquals(backend, r.fields.get("backend"), r.toString());
            assertEquals("reentrant", r.fields.get("kind"), r.toString());
            assertEquals("acquired", r.fields.get("outcome"), r.toString());
            // The message is LogRecord::line(): the event's message, then every field as key=value.
            assertTrue(r.message.startsWith("acquired "), r.message);
            assertTrue(r.message.contains("name=" + name), r.message);
            assertTrue(r.message.contains("backend=" + backend), r.message);
        }
        assertEquals("released", released.get(0).fields.get("outcome"), released.toString());
        // Records come from the thread that logged: the async calls' from a runtime worker, which is attached to
        // the JVM as a daemon.
        assertTrue(acquired.stream().anyMatch(r -> r.thread != Thread.currentThread()), acquired.toString());
        for (Captured.Record r : Captured.records(ObservabilityTest::fromPolylock)) {
            if (r.thread != Thread.currentThread()) {
                assertTrue(r.thread.isDaemon(), r + " came from a non-daemon thread");
            }
        }
        // connect is INFO on logger polylock.client, with the client's id.
        List<Captured.Record> connects = await(r -> fromPolylock(r) && "connect".equals(r.fields.get("op"))
                && backend.equals(r.fields.get("backend")));
        assertFalse(connects.isEmpty());
        assertEquals(Level.INFO, connects.get(0).level);
        assertEquals("polylock.client", connects.get(0).logger);
    }

    @Test
    void offEmitsNothingAndWarnOnlyWarnings() throws Exception {
        String url = sqliteUrl();
        String name = Backends.uniqueName("obs-off");
        Polylock.setLogLevel("off");
        assertEquals("off", Polylock.getLogLevel());
        try (PolylockClient client = Polylock.connect(url)) {
            holdOnce(client, name);
        }
        assertThrows(PolylockException.class, () -> Polylock.connect("redis://127.0.0.1:1"));
        Thread.sleep(100);
        assertEquals(List.of(), Captured.records(ObservabilityTest::fromPolylock));

        Polylock.setLogLevel("WARNING");
        assertEquals("warn", Polylock.getLogLevel());
        try (PolylockClient client = Polylock.connect(url)) {
            holdOnce(client, name);
        }
        assertEquals(List.of(), Captured.records(ObservabilityTest::fromPolylock), "debug and info are below warn");
        assertThrows(PolylockException.class, () -> Polylock.connect("redis://127.0.0.1:1"));
        List<Captured.Record> failed = await(r -> fromPolylock(r) && "connect".equals(r.fields.get("op")));
        assertEquals(1, failed.size(), failed.toString());
        assertEquals(Level.WARN, failed.get(0).level);
        assertEquals("CONNECTION", failed.get(0).fields.get("error_kind"), failed.toString());
    }

    @Test
    void aLevelChangeTakesEffectAtOnce() throws Exception {
        try (PolylockClient client = Polylock.connect(sqliteUrl())) {
            String first = Backends.uniqueName("obs-level");
            Polylock.setLogLevel("debug");
            holdOnce(client, first);
            assertEquals(4, await(about(first), 4).size(), polylockRecords());

            String second = Backends.uniqueName("obs-level");
            Polylock.setLogLevel("info");
            holdOnce(client, second);
            Polylock.setLogLevel("debug");
            String third = Backends.uniqueName("obs-level");
            holdOnce(client, third);
            assertEquals(4, await(about(third), 4).size());
            assertEquals(List.of(), Captured.records(about(second)), "acquire and release are debug records");

            // SLF4J's own configuration still filters what polylock hands it.
            Captured.setLevel("polylock.engine", Level.INFO);
            String fourth = Backends.uniqueName("obs-level");
            holdOnce(client, fourth);
            Captured.clearLevel("polylock.engine");
            assertEquals(List.of(), Captured.records(about(fourth)));
        }
    }

    @Test
    void aBadLevelNameIsATypedErrorAndChangesNothing() {
        Polylock.setLogLevel("error");
        PolylockException bad = assertThrows(PolylockException.class, () -> Polylock.setLogLevel("loud"));
        assertEquals(ErrorCode.INVALID_ARGUMENT, bad.getCode());
        assertTrue(bad.getMessage().contains("loud") && bad.getMessage().contains("trace"), bad.getMessage());
        assertEquals("error", Polylock.getLogLevel());
        assertThrows(NullPointerException.class, () -> Polylock.setLogLevel(null));
        for (String name : new String[] {"off", "error", "warn", "info", "debug", "trace"}) {
            Polylock.setLogLevel(name.toUpperCase());
            assertEquals(name, Polylock.getLogLevel());
        }
    }

    @Test
    void theLevelAtLoadIsTheMostDetailedOneSlf4jEnablesOnPolylockButAtLeastWarn() {
        String logger = "polylock.obs-test.levels";
        Object[][] cases = {
            {Level.TRACE, "trace"}, {Level.DEBUG, "debug"}, {Level.INFO, "info"}, {Level.WARN, "warn"},
            {Level.ERROR, "warn"}, {Captured.OFF, "warn"},
        };
        try {
            for (Object[] c : cases) {
                Captured.setLevel(logger, (Level) c[0]);
                assertEquals(c[1], Logging.levelOf(LoggerFactory.getLogger(logger)), String.valueOf(c[0]));
            }
        } finally {
            Captured.clearLevel(logger);
        }
    }

    /** The level a child JVM chose at load, with {@code env} set and the level SLF4J enables on polylock. */
    private static List<String> childJvm(Map<String, String> env, String slf4jLevel) throws Exception {
        Path java = Paths.get(System.getProperty("java.home"), "bin", "java");
        List<String> command = new ArrayList<>(List.of(java.toString(), "-cp", System.getProperty("java.class.path")));
        if (slf4jLevel != null) {
            command.add("-Dcaptured.polylock.level=" + slf4jLevel);
        }
        command.add(PrintLogLevel.class.getName());
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().remove("POLYLOCK_LOG");
        builder.environment().remove("DEBUG");
        builder.environment().putAll(env);
        Process child = builder.start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (InputStream in = child.getInputStream()) {
            in.transferTo(out);
        }
        assertTrue(child.waitFor(60, TimeUnit.SECONDS));
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, child.exitValue(), text);
        return List.of(text.split("\n"));
    }

    @Test
    void theEnvironmentChoosesTheLevelAtLoadBeforeSlf4j() throws Exception {
        assertEquals("level=info", childJvm(Map.of(), null).get(0));
        assertEquals("level=trace", childJvm(Map.of(), "TRACE").get(0));
        assertEquals("level=warn", childJvm(Map.of(), "ERROR").get(0));
        assertEquals("level=debug", childJvm(Map.of("POLYLOCK_LOG", "debug"), "ERROR").get(0));
        assertEquals("level=off", childJvm(Map.of("POLYLOCK_LOG", "off"), "TRACE").get(0));
        assertEquals("level=debug", childJvm(Map.of("DEBUG", "express,polylock"), null).get(0));
        List<String> bad = childJvm(Map.of("POLYLOCK_LOG", "loud"), "DEBUG");
        assertEquals("level=debug", bad.get(0), bad.toString());
        assertTrue(bad.size() > 1 && bad.get(1).startsWith("record=WARN POLYLOCK_LOG: unknown log level \"loud\""),
                bad.toString());
    }

    @Test
    void aPasswordInTheUrlIsInNoRecord() throws Exception {
        Polylock.setLogLevel("trace");
        List<String> passwords = new ArrayList<>();
        // A password the test Redis does not expect: the connect fails, and says so in a WARN record.
        String redis = URI.create(Backends.redisUrl()).getAuthority().replaceAll(".*@", "");
        String wrong = "wrong-" + Backends.uniqueName("pw");
        passwords.add(wrong);
        PolylockException refused =
                assertThrows(PolylockException.class, () -> Polylock.connect("redis://:" + wrong + "@" + redis));
        assertFalse(refused.getMessage().contains(wrong), refused.getMessage());
        List<Captured.Record> connect = await(r -> fromPolylock(r) && "connect".equals(r.fields.get("op")));
        assertFalse(connect.isEmpty());
        assertTrue(connect.get(0).fields.get("url").contains("***"), connect.toString());
        // Servers that do want one (tests/services' TLS Redis, PostgreSQL, MariaDB), where they run.
        for (String variable :
                new String[] {"POLYLOCK_TEST_REDIS_TLS_URL", "POLYLOCK_TEST_POSTGRES_URL", "POLYLOCK_TEST_MARIADB_URL"}) {
            String url = System.getenv(variable);
            if (url == null || url.isEmpty()) {
                continue;
            }
            String userInfo = URI.create(url).getRawUserInfo();
            if (userInfo == null || !userInfo.contains(":") || userInfo.endsWith(":")) {
                continue;
            }
            String password = userInfo.substring(userInfo.indexOf(':') + 1);
            // A password spelled like the project (tests/services' SQL servers use "polylock") is in every logger
            // name: such a server is still connected to, but only its other passwords can be searched for.
            if (!"polylock".contains(password)) {
                passwords.add(password);
            }
            String name = Backends.uniqueName("obs-password");
            try (PolylockClient client = Polylock.connect(url)) {
                holdOnce(client, name);
            } catch (PolylockException e) {
                if (e.getMessage().contains("not part of this build")) {
                    continue;
                }
                throw e;
            }
            assertFalse(await(about(name)).isEmpty(), variable);
        }
        List<Captured.Record> all = Captured.records(r -> true);
        for (String password : passwords) {
            for (Captured.Record r : all) {
                if (r.everything().contains(password)) {
                    fail("a record carries a password: " + r.everything().replace(password, "<PASSWORD>"));
                }
            }
        }
    }

    @Test
    void aFailingLoggerLosesItsRecordNotTheOperation() throws Exception {
        Polylock.setLogLevel("debug");
        String broken = Backends.uniqueName("obs-broken");
        String fine = Backends.uniqueName("obs-fine");
        Captured.failWhen(r -> broken.equals(r.fields.get("name")));
        try (PolylockClient client = Polylock.connect(sqliteUrl())) {
            holdOnce(client, broken);
            holdOnce(client, fine);
            assertFalse(client.getLock(broken).isLocked());
        }
        assertEquals(4, await(about(fine), 4).size(), polylockRecords());
        assertEquals(List.of(), Captured.records(about(broken)));
    }

    /** The value of one sample line of a Prometheus text, or -1 if absent. */
    private static long sample(String text, String series) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(series) + " (\\d+)$").matcher(text);
        return m.find() ? Long.parseLong(m.group(1)) : -1;
    }

    @ParameterizedTest
    @ValueSource(strings = {"sqlite", "redis"})
    void metricsMoveAfterAcquireAndRelease(String backend) throws Exception {
        Metrics before = Polylock.metrics();
        String acquiredSeries = "polylock_acquires_total{backend=\"" + backend + "\",kind=\"reentrant\",outcome=\"acquired\"}";
        long scrapedBefore = Math.max(0, sample(Polylock.prometheusText(), acquiredSeries));
        String url = url(backend);
        try (PolylockClient client = Polylock.connect(url)) {
            holdOnce(client, Backends.uniqueName("obs-metrics"));
            RLock held = client.getLock(Backends.uniqueName("obs-metrics"));
            held.lock();
            try (PolylockClient other = Polylock.connect(url)) {
                assertFalse(other.getLock(held.getName()).tryLock(0, -1, TimeUnit.MILLISECONDS));
            }
            held.unlock();

            Metrics mine = client.getMetrics();
            Metrics.Series series = mine.getSeries(backend, "reentrant");
            assertNotNull(series, mine.toJson());
            assertEquals(3, series.getAcquires().get("acquired"), mine.toJson());
            assertEquals(3, series.getReleases(), mine.toJson());
            assertEquals(3, series.getAcquireWait().getCount());
            assertEquals(3, series.getHoldTime().getCount());
            assertEquals(3, java.util.Arrays.stream(series.getHoldTime().getBuckets()).sum());
            assertEquals(mine.getBucketsLeSeconds().length + 1, series.getHoldTime().getBuckets().length);
            assertEquals(0, series.getLost().values().stream().mapToLong(Long::longValue).sum());
            assertTrue(mine.getBackend(backend).getConnects() >= 1, mine.toJson()); // process-wide, per backend
            // The same document as plain maps and lists.
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> raw = (List<Map<String, Object>>) mine.asMap().get("series");
            assertEquals(backend, raw.get(0).get("backend"));

            Metrics after = Polylock.metrics();
            long moved = after.getAcquires(backend, "reentrant", "acquired")
                    - before.getAcquires(backend, "reentrant", "acquired");
            assertTrue(moved >= 3, "acquired moved by " + moved);
            assertTrue(after.getAcquires(backend, "reentrant", "timeout")
                    >= before.getAcquires(backend, "reentrant", "timeout") + 1, after.toJson());
            assertTrue(after.getReleases(backend, "reentrant") >= before.getReleases(backend, "reentrant") + 3);
            long scraped = sample(Polylock.prometheusText(), acquiredSeries);
            assertTrue(scraped >= scrapedBefore + 3, "scraped " + scraped + " after " + scrapedBefore);
        }
    }

    @Test
    void metricsCanBeTurnedOff() throws Exception {
        try (PolylockClient client = Polylock.connect(sqliteUrl())) {
            Polylock.setMetricsEnabled(false);
            assertFalse(Polylock.isMetricsEnabled());
            holdOnce(client, Backends.uniqueName("obs-nometrics"));
            assertEquals(0, client.getMetrics().getAcquires("sqlite", "reentrant", "acquired"));
            Polylock.setMetricsEnabled(true);
            assertTrue(Polylock.isMetricsEnabled());
            holdOnce(client, Backends.uniqueName("obs-nometrics"));
            assertEquals(2, client.getMetrics().getAcquires("sqlite", "reentrant", "acquired"));
        }
        PolylockClient closed = Polylock.connect(sqliteUrl());
        closed.close();
        assertEquals(ErrorCode.CONNECTION, assertThrows(PolylockException.class, closed::getMetrics).getCode());
    }
}
