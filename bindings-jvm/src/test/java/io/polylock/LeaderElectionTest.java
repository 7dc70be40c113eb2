package io.polylock;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link PolylockClient#getLeaderElection(String)} on every backend: one leader of several, resign hands over with
 * growing terms, getLeader and observe follow, try-with-resources resigns, a campaign that times out or is
 * interrupted leaves no candidacy; RedLock refuses; and on ZooKeeper a real Curator 5.7.1 LeaderLatch
 * (tests/interop/curator's CuratorLeaderLatch, in another JVM) and polylock take part in one election.
 */
class LeaderElectionTest {
    static List<Backends.Backend> backends() {
        return Backends.all();
    }

    private static <T> T poll(BlockingQueue<T> queue) throws InterruptedException {
        T item = queue.poll(30, TimeUnit.SECONDS);
        assertNotNull(item, "nothing arrived within 30 s");
        return item;
    }

    @ParameterizedTest
    @MethodSource("backends")
    void oneLeaderOfSeveralAndResignHandsOverWithGrowingTerms(Backends.Backend backend) throws Exception {
        String name = Backends.uniqueName("election");
        List<PolylockClient> clients = new ArrayList<>();
        ExecutorService pool = Executors.newCachedThreadPool();
        try {
            for (int i = 0; i < 3; i++) {
                clients.add(backend.connect());
            }
            RLeadership first = clients.get(0).getLeaderElection(name).campaign("node-0", 30, TimeUnit.SECONDS);
            assertTrue(first.isLeader(), backend.label);
            assertEquals("node-0", new String(clients.get(1).getLeaderElection(name).getLeader().orElseThrow(),
                    StandardCharsets.UTF_8));
            assertEquals(first.getTerm(), clients.get(2).getLeaderElection(name).getLeaderInfo().orElseThrow().getTerm());
            BlockingQueue<Object[]> won = new LinkedBlockingQueue<>();
            List<Future<?>> candidates = new ArrayList<>();
            for (int i = 1; i <= 2; i++) {
                int index = i;
                candidates.add(pool.submit(() -> {
                    won.add(new Object[] {index, clients.get(index).getLeaderElection(name).campaign("node-" + index)});
                    return null;
                }));
            }
            Thread.sleep(500);
            assertTrue(won.isEmpty(), "a second leader while the first leads");
            long term = first.getTerm();
            first.resign();
            assertFalse(first.isLeader());
            assertFalse(first.isLost());
            first.resign(); // twice is harmless
            for (int round = 0; round < 2; round++) {
                Object[] next = poll(won);
                RLeadership leadership = (RLeadership) next[1];
                assertTrue(leadership.isLeader());
                assertTrue(leadership.getTerm() > term, "each new leader has a greater term");
                Leader seen = clients.get(0).getLeaderElection(name).getLeaderInfo().orElseThrow();
                assertEquals(new Leader(("node-" + next[0]).getBytes(StandardCharsets.UTF_8), leadership.getTerm()), seen);
                if (round == 0) {
                    Thread.sleep(200);
                    assertTrue(won.isEmpty(), "two leaders at once");
                }
                term = leadership.getTerm();
                leadership.resign();
            }
            for (Future<?> candidate : candidates) {
                candidate.get(30, TimeUnit.SECONDS);
            }
            assertEquals(Optional.empty(), clients.get(0).getLeaderElection(name).getLeaderInfo());
        } finally {
            pool.shutdownNow();
            clients.forEach(PolylockClient::close);
        }
    }

    @ParameterizedTest
    @MethodSource("backends")
    void observeFollowsProclaimAndCloseResigns(Backends.Backend backend) throws Exception {
        try (PolylockClient watcher = backend.connect(); PolylockClient candidate = backend.connect()) {
            String name = Backends.uniqueName("observe");
            BlockingQueue<Optional<Leader>> changes = new LinkedBlockingQueue<>();
            LeaderSubscription subscription = watcher.getLeaderElection(name).observe(changes::add);
            assertEquals(Optional.empty(), poll(changes), backend.label + ": nobody leads yet");
            RLeadership held;
            try (RLeadership leadership = candidate.getLeaderElection(name).campaign(new byte[] {1, 2}, 30, TimeUnit.SECONDS)) {
                held = leadership;
                assertEquals(Optional.of(new Leader(new byte[] {1, 2}, leadership.getTerm())), poll(changes));
                leadership.proclaim("a-2");
                assertArrayEquals("a-2".getBytes(StandardCharsets.UTF_8), leadership.getValue());
                assertEquals(Optional.of(new Leader("a-2".getBytes(StandardCharsets.UTF_8), leadership.getTerm())),
                        poll(changes));
            }
            assertFalse(held.isLeader(), "close resigned");
            assertEquals(Optional.empty(), poll(changes), "nobody leads after the resign");
            assertThrows(IllegalMonitorStateException.class, () -> held.proclaim("late"));
            assertFalse(held.onLost().isDone(), "a resigned leadership is not lost");
            subscription.close();
            assertTrue(subscription.isClosed());
            RLeadership again = candidate.getLeaderElection(name).campaign("b", 0, TimeUnit.SECONDS);
            assertTrue(again.getTerm() > held.getTerm());
            Thread.sleep(200);
            assertTrue(changes.isEmpty(), "a closed subscription calls nothing");
            again.resign();
        }
    }

    @ParameterizedTest
    @MethodSource("backends")
    void tryCampaignReturnsNullWhileAnotherLeads(Backends.Backend backend) throws Exception {
        try (PolylockClient first = backend.connect(); PolylockClient second = backend.connect()) {
            String name = Backends.uniqueName("try");
            RLeadership leader = first.getLeaderElection(name).tryCampaign("a", 30, TimeUnit.SECONDS);
            assertNotNull(leader, backend.label);
            long started = System.nanoTime();
            assertNull(second.getLeaderElection(name).tryCampaign("b", 300, TimeUnit.MILLISECONDS));
            assertTrue(System.nanoTime() - started >= TimeUnit.MILLISECONDS.toNanos(250), "it waited");
            assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(PolylockException.class,
                    () -> second.getLeaderElection(name).tryCampaign("b", -5, TimeUnit.MILLISECONDS)).getCode());
            leader.resign();
            RLeadership next = second.getLeaderElection(name).tryCampaign("c".getBytes(StandardCharsets.UTF_8), 10,
                    TimeUnit.SECONDS);
            assertNotNull(next, "the timed-out candidacy left nothing behind");
            assertTrue(next.getTerm() > leader.getTerm());
            next.resign();
        }
    }

    @ParameterizedTest
    @MethodSource("backends")
    void aTimedOutOrInterruptedCampaignLeavesNoCandidacy(Backends.Backend backend) throws Exception {
        try (PolylockClient first = backend.connect(); PolylockClient second = backend.connect()) {
            String name = Backends.uniqueName("timeout");
            RLeadership leader = first.getLeaderElection(name).campaign("a", 30, TimeUnit.SECONDS);
            PolylockException timedOut = assertThrows(PolylockException.class,
                    () -> second.getLeaderElection(name).campaign("b", 200, TimeUnit.MILLISECONDS));
            assertEquals(ErrorCode.TIMEOUT, timedOut.getCode(), backend.label);
            CompletableFuture<Throwable> thrown = new CompletableFuture<>();
            Thread waiter = new Thread(() -> {
                try {
                    second.getLeaderElection(name).campaign("c");
                    thrown.complete(null);
                } catch (Throwable t) {
                    thrown.complete(t);
                }
            });
            waiter.start();
            Thread.sleep(300);
            waiter.interrupt();
            assertTrue(thrown.get(10, TimeUnit.SECONDS) instanceof InterruptedException);
            leader.resign();
            // Neither candidate stayed in the queue: a try-once campaign leads at once.
            RLeadership next = second.getLeaderElection(name).campaign("d", 0, TimeUnit.SECONDS);
            assertTrue(next.getTerm() > leader.getTerm());
            assertEquals("d", new String(next.getValue(), StandardCharsets.UTF_8));
            next.resign();
        }
    }

    @ParameterizedTest
    @MethodSource("backends")
    void closingTheClientEndsTheLeadership(Backends.Backend backend) throws Exception {
        String name = Backends.uniqueName("closing");
        PolylockClient client = backend.connect();
        RLeadership leadership = client.getLeaderElection(name).campaign("x", 30, TimeUnit.SECONDS);
        assertNull(leadership.getLostReason());
        client.close();
        assertNotNull(leadership.onLost().get(30, TimeUnit.SECONDS), backend.label);
        // Not asserted: isLeader() false after close. On the lease-backed layouts the core forwards the lock's loss
        // to the leadership on a task the closing runtime may drop first (reported to the core).
        try (PolylockClient other = backend.connect()) {
            RLeadership next = other.getLeaderElection(name).campaign("y", 30, TimeUnit.SECONDS);
            assertTrue(next.getTerm() > leadership.getTerm());
            next.resign();
        }
    }

    @Test
    void badInputIsRefused() {
        try (PolylockClient client = Polylock.connect("mem://jvm-election-bad")) {
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> client.getLeaderElection("")).getCode());
            assertThrows(NullPointerException.class, () -> client.getLeaderElection("x").campaign((byte[]) null));
        }
    }

    @Test
    @EnabledIfEnvironmentVariable(named = "POLYLOCK_TEST_REDIS_URL", matches = "redis://.+")
    void redLockHasNoElectionsNorLatches() {
        String redis = Backends.redisUrl();
        // One server: a list naming it three times is refused (issue 35).
        try (PolylockClient client = Polylock.connect(Polylock.redlockUrl(List.of(redis)))) {
            assertEquals(ErrorCode.UNSUPPORTED,
                    assertThrows(PolylockException.class, () -> client.getLeaderElection("x")).getCode());
            assertEquals(ErrorCode.UNSUPPORTED,
                    assertThrows(PolylockException.class, () -> client.getCountDownLatch("x")).getCode());
        }
    }

    // ---- Curator's LeaderLatch (tests/interop/curator), in another JVM

    /** `java -cp ... CuratorLeaderLatch HOSTS ARGS...`, its stdout read line by line. */
    private static final class Curator implements AutoCloseable {
        final Process process;
        final BufferedReader lines;
        final Writer stdin;

        Curator(String... args) throws IOException {
            List<String> command = new ArrayList<>(List.of("java", "-cp", curatorClasspath(),
                    "io.polylock.interop.CuratorLeaderLatch", zkHosts()));
            command.addAll(List.of(args));
            process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            lines = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        }

        String next() throws Exception {
            String line = CompletableFuture.supplyAsync(() -> {
                try {
                    return lines.readLine();
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
            }).get(60, TimeUnit.SECONDS);
            assertNotNull(line, "CuratorLeaderLatch ended without a line");
            return line;
        }

        @Override
        public void close() {
            process.destroyForcibly();
        }
    }

    private static String zkUrl() {
        return System.getenv("POLYLOCK_TEST_ZOOKEEPER_URL");
    }

    private static String zkHosts() {
        return zkUrl().replaceFirst("^zk://", "").split("[/?]")[0];
    }

    private static String classpath;

    /** Builds tests/interop/curator once (under the lock core/tests/election_interop.rs takes) and reads its classpath. */
    private static synchronized String curatorClasspath() {
        if (classpath == null) {
            try {
                Path project = Paths.get("..", "tests", "interop", "curator").toAbsolutePath().normalize();
                Path lock = Paths.get(System.getProperty("java.io.tmpdir"), "polylock-curator-mvn.lock");
                Process build = new ProcessBuilder("flock", lock.toString(), "mvn", "-q", "-B", "package", "-DskipTests",
                        "dependency:build-classpath", "-Dmdep.outputFile=target/classpath.txt")
                        .directory(project.toFile()).inheritIO().start();
                assertEquals(0, build.waitFor(), "building tests/interop/curator failed");
                String deps = Files.readString(project.resolve("target/classpath.txt")).trim();
                classpath = project.resolve("target/classes") + ":" + deps;
            } catch (IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }
        return classpath;
    }

    @Test
    @EnabledIfEnvironmentVariable(named = "POLYLOCK_TEST_ZOOKEEPER_URL", matches = "zk://.+")
    void aCuratorLeaderLatchAndPolylockShareOneElection() throws Exception {
        String name = Backends.uniqueName("curator-election");
        String path = "/" + name;
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (PolylockClient client = Polylock.connect(zkUrl()); Curator curator = new Curator("lead", path, "curator-id")) {
            RLeaderElection election = client.getLeaderElection(name);
            assertEquals("LEADER", curator.next());
            Leader theirs = election.getLeaderInfo().orElseThrow(() -> new AssertionError("polylock sees Curator's leader"));
            assertEquals("curator-id", theirs.getValueAsString(), "the latch node's data is the participant id");
            PolylockException refused = assertThrows(PolylockException.class,
                    () -> election.campaign("poly-value", 500, TimeUnit.MILLISECONDS));
            assertEquals(ErrorCode.TIMEOUT, refused.getCode(), "Curator's leader keeps polylock from leading");

            Future<RLeadership> waiting = pool.submit(() -> election.campaign("poly-value", 60, TimeUnit.SECONDS));
            Thread.sleep(1000);
            assertFalse(waiting.isDone(), "polylock leads while Curator does");
            curator.stdin.write("close\n");
            curator.stdin.flush();
            assertEquals("CLOSED", curator.next());
            RLeadership ours = waiting.get(30, TimeUnit.SECONDS);
            assertTrue(ours.getTerm() > theirs.getTerm(), "terms (czxids) grow across Curator and polylock");

            try (Curator probe = new Curator("leader", path)) {
                assertEquals("LEADER poly-value", probe.next(), "Curator's getLeader() sees polylock's value");
            }
            try (Curator latch = new Curator("await", path, "curator-2", "1000")) {
                assertEquals("TIMEOUT", latch.next(), "polylock's leader keeps Curator's LeaderLatch from leading");
            }
            try (Curator latch = new Curator("await", path, "curator-3", "60000")) {
                Thread.sleep(1000);
                ours.resign();
                assertEquals("LEADER", latch.next(), "Curator's LeaderLatch leads once polylock resigned");
                assertEquals("CLOSED", latch.next());
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
