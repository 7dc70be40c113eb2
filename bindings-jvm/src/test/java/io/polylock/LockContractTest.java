package io.polylock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.polylock.Backends.Backend;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The lock contract of DESIGN.md through the Java API, on every backend: threads, async variants, leases, errors. */
class LockContractTest {
    static Stream<Backend> backends() {
        return Backends.all().stream();
    }

    /**
     * Backends landing in parallel answer isLocked/remainTimeToLive/forceUnlock with "not supported" until they
     * implement them: such a test is reported as skipped (visible in the tally), not passed.
     */
    private static void assumeStoreQueries(PolylockClient client) {
        try {
            client.getLock("query-probe").isLocked();
        } catch (PolylockException e) {
            Assumptions.assumeFalse(e.getCode() == ErrorCode.BACKEND && e.getMessage().contains("not supported"),
                    e.getMessage());
            throw e;
        }
    }

    private static void assertStrictlyIncreasing(List<Long> ledger) {
        for (int i = 1; i < ledger.size(); i++) {
            assertTrue(ledger.get(i) > ledger.get(i - 1), "token " + ledger.get(i) + " after " + ledger.get(i - 1));
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void threadsOfTwoClientsExcludeEachOtherAndTokensFollowTheLedger(Backend backend) throws Exception {
        int threads = 6;
        int rounds = 12;
        try (PolylockClient a = backend.connect(); PolylockClient b = backend.connect()) {
            RFencedLock[] locks = {a.getFencedLock("ledger"), b.getFencedLock("ledger")};
            AtomicInteger inside = new AtomicInteger();
            List<Long> ledger = Collections.synchronizedList(new ArrayList<>());
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                List<Future<?>> workers = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    RFencedLock lock = locks[t % 2];
                    workers.add(pool.submit(() -> {
                        for (int r = 0; r < rounds; r++) {
                            Long token = lock.lockAndGetToken();
                            try {
                                assertEquals(1, inside.incrementAndGet(), "two holders at once");
                                ledger.add(token);
                                assertEquals(token, lock.getToken());
                                inside.decrementAndGet();
                            } finally {
                                lock.unlock();
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> worker : workers) {
                    worker.get(120, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }
            assertNull(locks[0].getToken(), "no hold, no token");
            assertEquals(threads * rounds, ledger.size());
            assertStrictlyIncreasing(ledger);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void asyncVariantsOwnByExplicitThreadIdAndKeepTheLedger(Backend backend) throws Exception {
        try (PolylockClient client = backend.connect()) {
            RFencedLock lock = client.getFencedLock("async");
            long first = 7_000_001L;
            long second = 7_000_002L;
            Long firstToken = lock.lockAndGetTokenAsync(-1, TimeUnit.MILLISECONDS, first).get(10, TimeUnit.SECONDS);
            assertTrue(lock.isHeldByThread(first));
            assertFalse(lock.isHeldByCurrentThread(), "the explicit thread id owns it, not the caller");
            assertFalse(lock.tryLockAsync(second).get(10, TimeUnit.SECONDS));

            CompletableFuture<Long> waiting = lock.tryLockAndGetTokenAsync(30, -1, TimeUnit.SECONDS, second);
            ExecutionException notOwner =
                    assertThrows(ExecutionException.class, () -> lock.unlockAsync(second).get(10, TimeUnit.SECONDS));
            assertInstanceOf(IllegalMonitorStateException.class, notOwner.getCause());
            lock.unlockAsync(first).get(10, TimeUnit.SECONDS);
            Long secondToken = waiting.get(10, TimeUnit.SECONDS);
            assertTrue(secondToken > firstToken);
            lock.unlockAsync(second).get(10, TimeUnit.SECONDS);

            // Many owners through async chains only: still one at a time, tokens in order.
            AtomicInteger inside = new AtomicInteger();
            List<Long> ledger = Collections.synchronizedList(new ArrayList<>());
            List<CompletableFuture<Void>> chains = new ArrayList<>();
            for (long owner = 8_000_000L; owner < 8_000_010L; owner++) {
                long id = owner;
                chains.add(lock.lockAndGetTokenAsync(-1, TimeUnit.MILLISECONDS, id).thenCompose(token -> {
                    int holders = inside.incrementAndGet();
                    ledger.add(holders == 1 ? token : -1L);
                    inside.decrementAndGet();
                    return lock.unlockAsync(id);
                }));
            }
            CompletableFuture.allOf(chains.toArray(new CompletableFuture[0])).get(60, TimeUnit.SECONDS);
            assertEquals(10, ledger.size());
            assertFalse(ledger.contains(-1L), "two async owners held the lock at once");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void reentrancyCountsPerThreadAndQueriesSeeEveryHolder(Backend backend) throws Exception {
        try (PolylockClient a = backend.connect(); PolylockClient b = backend.connect()) {
            assumeStoreQueries(a);
            RLock lock = a.getLock("reentrant");
            RLock theirs = b.getLock("reentrant");
            assertFalse(theirs.isLocked());
            assertEquals(-2, theirs.remainTimeToLive());
            lock.lock();
            lock.lock();
            assertEquals(2, lock.getHoldCount());
            assertTrue(lock.isHeldByCurrentThread());
            assertTrue(theirs.isLocked(), "another client sees the hold");
            long ttl = theirs.remainTimeToLive();
            if (backend.storeKeepsTheHoldsLease()) {
                assertTrue(ttl > 20_000 && ttl <= 30_000, "watchdog lease left: " + ttl);
            } else {
                assertTrue(ttl == -1 || ttl > 0, "held, without expiry or with its session's: " + ttl);
            }
            assertFalse(runInThread(() -> lock.tryLock()), "another thread of the same client is another owner");
            lock.unlock();
            assertEquals(1, lock.getHoldCount());
            assertFalse(theirs.tryLock());
            lock.unlock();
            assertEquals(0, lock.getHoldCount());
            assertFalse(lock.isLocked());
            assertTrue(theirs.tryLock());
            theirs.unlock();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void unlockByANonOwnerIsIllegalMonitorState(Backend backend) throws Exception {
        try (PolylockClient client = backend.connect()) {
            RLock lock = client.getLock("owned");
            assertThrows(IllegalMonitorStateException.class, lock::unlock, "never locked");
            lock.lock();
            Throwable fromOtherThread = runInThread(() -> {
                try {
                    lock.unlock();
                    return null;
                } catch (IllegalMonitorStateException e) {
                    return e;
                }
            });
            assertInstanceOf(IllegalMonitorStateException.class, fromOtherThread);
            assertTrue(lock.isHeldByCurrentThread(), "a failed unlock changes nothing");
            lock.unlock();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void interruptStopsLockInterruptiblyAndLeavesNothingHeld(Backend backend) throws Exception {
        try (PolylockClient a = backend.connect(); PolylockClient b = backend.connect()) {
            RLock lock = a.getLock("interrupt");
            lock.lock();
            AtomicReference<Object> outcome = new AtomicReference<>();
            Thread waiter = new Thread(() -> {
                try {
                    lock.lockInterruptibly();
                    outcome.set("acquired");
                } catch (InterruptedException e) {
                    outcome.set(e);
                }
            });
            waiter.start();
            Thread.sleep(300);
            waiter.interrupt();
            waiter.join(10_000);
            assertFalse(waiter.isAlive(), "the interrupt ended the wait");
            assertInstanceOf(InterruptedException.class, outcome.get());
            assertFalse(lock.isHeldByThread(waiter.getId()));

            // A cancelled async acquisition leaves nothing held either.
            CompletableFuture<Void> cancelled = lock.lockAsync(9_000_001L);
            Thread.sleep(100);
            assertTrue(cancelled.cancel(true));

            lock.unlock();
            RLock theirs = b.getLock("interrupt");
            assertTrue(theirs.tryLock(10, TimeUnit.SECONDS), "the cancelled waiters hold nothing");
            theirs.unlock();
            assertFalse(lock.isHeldByThread(9_000_001L));
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void anExplicitLeaseExpiresAndTheOwnerLearnsItWasLost(Backend backend) throws Exception {
        try (PolylockClient a = backend.connect(); PolylockClient b = backend.connect()) {
            assumeStoreQueries(a);
            RLock lock = a.getLock("lease");
            assertTrue(lock.tryLock(0, 400, TimeUnit.MILLISECONDS));
            long ttl = lock.remainTimeToLive();
            if (backend.storeKeepsTheHoldsLease()) {
                assertTrue(ttl > 0 && ttl <= 400, "lease left: " + ttl);
            } else {
                assertTrue(ttl == -1 || ttl > 0, "held, without expiry or with its session's: " + ttl);
            }
            RLock theirs = b.getLock("lease");
            assertTrue(theirs.tryLock(10, TimeUnit.SECONDS), "free once the lease ran out");
            assertFalse(lock.isHeldByCurrentThread());
            PolylockException lost = assertThrows(PolylockException.class, lock::unlock);
            assertEquals(ErrorCode.LOST, lost.getCode());
            theirs.unlock();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void forceUnlockFreesTheLockAndWakesAWaiter(Backend backend) throws Exception {
        try (PolylockClient a = backend.connect(); PolylockClient b = backend.connect()) {
            assumeStoreQueries(a);
            RLock lock = a.getLock("forced");
            lock.lock();
            RLock theirs = b.getLock("forced");
            CompletableFuture<Boolean> waiter = CompletableFuture.supplyAsync(() -> {
                try {
                    boolean got = theirs.tryLock(20, TimeUnit.SECONDS);
                    theirs.unlock();
                    return got;
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            Thread.sleep(200);
            if (backend.isSqlSession()) {
                PolylockException refused = assertThrows(PolylockException.class, () -> b.getLock("forced").forceUnlock());
                assertEquals(ErrorCode.UNSUPPORTED, refused.getCode());
                assertTrue(refused.getMessage().contains("session"), refused.getMessage());
                lock.unlock();
                assertTrue(waiter.get(5, TimeUnit.SECONDS), "the waiter got the lock once it was released");
                return;
            }
            assertTrue(b.getLock("forced").forceUnlock());
            assertTrue(waiter.get(5, TimeUnit.SECONDS), "the waiter got the lock soon after the forced unlock");
            PolylockException lost = assertThrows(PolylockException.class, lock::unlock);
            assertEquals(ErrorCode.LOST, lost.getCode());
            assertFalse(theirs.forceUnlock(), "nothing left to remove");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void lockWithinIsTheWaitingFormThatThrowsTimeout(Backend backend) throws Exception {
        try (PolylockClient a = backend.connect(); PolylockClient b = backend.connect()) {
            String name = Backends.uniqueName("within");
            RFencedLock mine = a.getFencedLock(name);
            mine.lockWithin(5, -1, TimeUnit.SECONDS);
            assertTrue(mine.isHeldByCurrentThread(), backend.label);
            Long first = mine.getToken();
            RLock theirs = b.getLock(name);
            long started = System.nanoTime();
            PolylockException timedOut = assertThrows(PolylockException.class,
                    () -> theirs.lockWithin(300, -1, TimeUnit.MILLISECONDS));
            assertEquals(ErrorCode.TIMEOUT, timedOut.getCode(), timedOut.getMessage());
            assertTrue(System.nanoTime() - started >= TimeUnit.MILLISECONDS.toNanos(250), "it waited");
            assertFalse(theirs.isHeldByCurrentThread(), "a timed-out wait holds nothing");
            assertEquals(ErrorCode.TIMEOUT,
                    assertThrows(PolylockException.class, () -> theirs.lockWithin(0, -1, TimeUnit.SECONDS)).getCode(),
                    "a wait of zero tries once");
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> theirs.lockWithin(-5, -1, TimeUnit.MILLISECONDS))
                            .getCode());
            mine.unlock();
            // Free again: the waiting form takes it, and keeps it until the owner unlocks.
            RFencedLock fenced = b.getFencedLock(name);
            fenced.lockWithin(5, 30, TimeUnit.SECONDS);
            assertTrue(fenced.isHeldByCurrentThread());
            assertTrue(fenced.getToken() > first, "a later hold has a greater token");
            assertFalse(a.getLock(name).tryLock(), "held in the store");
            fenced.unlock();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void statusListAndForceUnlockFromAnotherClient(Backend backend) throws Exception {
        // SQL's default kind is a session lock, which another session can neither list nor break: there the lease
        // kind is the one whose rows the store shows.
        String kind = backend.isSqlSession() ? "lease" : null;
        try (PolylockClient a = backend.connect(); PolylockClient b = backend.connect()) {
            String name = Backends.uniqueName("admin");
            RLock lock = kind == null ? a.getLock(name) : a.getLeaseLock(name);
            assertFalse(b.status(name, kind).isHeld());
            lock.lockWithin(5, -1, TimeUnit.SECONDS);
            LockStatus status = b.status(name, kind);
            assertEquals(List.of("name", "kind", "backend", "held", "holder", "fencing_token", "token_counter",
                    "remaining_lease_ms", "lease_expires", "waiters", "layout", "details"),
                    new ArrayList<>(status.asMap().keySet()));
            assertEquals(name, status.getName());
            assertTrue(status.isHeld(), backend.label);
            assertNotNull(status.getLayout());
            if (kind == null) {
                assertEquals(status.getKind(), b.status(name).getKind(), "null is the default kind");
            }
            if (backend.label.equals("mem") || backend.url.startsWith("redis+cluster:")
                    || backend.url.startsWith("rediss+cluster:")) {
                // mem:// keeps no store the inspector can enumerate; a Redis Cluster's keys are
                // spread over masters one script cannot scan.
                assertEquals(ErrorCode.UNSUPPORTED,
                        assertThrows(PolylockException.class, () -> b.list(name)).getCode());
            } else {
                List<String> held = new ArrayList<>();
                for (LockEntry entry : b.list(name)) {
                    if (entry.isHeld()) {
                        held.add(entry.getName());
                    }
                }
                assertEquals(List.of(name), held);
                assertEquals(List.of(), b.list(name + "-none"));
            }
            assertTrue(b.forceUnlock(name, kind), "there was a hold to break");
            assertFalse(b.status(name, kind).isHeld());
            assertFalse(b.forceUnlock(name, kind), "nothing left to break");
            assertEquals(ErrorCode.LOST, assertThrows(PolylockException.class, lock::unlock).getCode());
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> b.status(name, "nonsense")).getCode());
        }
    }

    /** The fair and token kinds are Redis's (run-tests.sh always has one); the lease kind is SQL's (RwLockAndSemaphoreTest). */
    @org.junit.jupiter.api.Test
    void theFairAndTokenKindsHandOutIncreasingFencingTokens() throws Exception {
        Backend backend = backends().filter(Backend::isRedis).findFirst()
                .orElseThrow(() -> new AssertionError("no Redis: POLYLOCK_TEST_REDIS_URL is unset"));
        try (PolylockClient a = backend.connect(); PolylockClient b = backend.connect()) {
            for (String kind : List.of("fair", "token")) {
                String name = Backends.uniqueName(kind);
                RFencedLock mine = kind.equals("fair") ? a.getFairLock(name) : a.getTokenLock(name);
                RFencedLock theirs = kind.equals("fair") ? b.getFairLock(name) : b.getTokenLock(name);
                Long first = mine.lockAndGetToken();
                assertNotNull(first, kind);
                assertEquals(first, mine.getToken());
                assertNull(theirs.tryLockAndGetToken(), kind + ": held by the other client");
                mine.unlock();
                Long second = theirs.tryLockAndGetToken(5, TimeUnit.SECONDS);
                assertTrue(second > first, kind + ": " + second + " after " + first);
                theirs.unlock();
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void badInputGetsTypedErrors(Backend backend) throws InterruptedException {
        try (PolylockClient client = backend.connect()) {
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> client.getLock("")).getCode());
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> client.getLock("x".repeat(600))).getCode());
            assertThrows(NullPointerException.class, () -> client.getLock(null));
            assumeStoreQueries(client);
            RLock lock = client.getLock("bad-input");
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> lock.tryLock(0, 0, TimeUnit.SECONDS)).getCode());
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> lock.lock(-5, TimeUnit.SECONDS)).getCode());
            // -1 is Redisson's "wait as long as it takes"; every other negative wait is refused, in every form.
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> lock.tryLock(-5, TimeUnit.MILLISECONDS)).getCode());
            assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(PolylockException.class,
                    () -> lock.tryLock(-2, -1, TimeUnit.SECONDS)).getCode());
            assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(PolylockException.class,
                    () -> client.getLeaderElection("bad-input").campaign("v", -5, TimeUnit.MILLISECONDS)).getCode());
            // Outside 10 ms .. 365 days, the range every backend honours: refused before any write.
            long year = TimeUnit.DAYS.toMillis(365);
            for (long[] waitAndLease : new long[][] {
                    {0, Long.MAX_VALUE}, {0, year + 1}, {0, 5}, {Long.MAX_VALUE, -1}, {year + 1, -1}}) {
                PolylockException refused = assertThrows(PolylockException.class,
                        () -> lock.tryLock(waitAndLease[0], waitAndLease[1], TimeUnit.MILLISECONDS));
                assertEquals(ErrorCode.INVALID_ARGUMENT, refused.getCode(), refused.getMessage());
            }
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> lock.lock(Long.MAX_VALUE, TimeUnit.DAYS)).getCode());
            assertFalse(lock.isLocked(), "rejected calls took nothing");
            assertTrue(lock.tryLock(year, year, TimeUnit.MILLISECONDS), "the longest wait and lease are honoured");
            lock.unlock();
            if (!backend.isRedis()) {
                // A kind the backend does not offer is refused when the handle is made.
                assertEquals(ErrorCode.UNSUPPORTED,
                        assertThrows(PolylockException.class, () -> client.getFairLock("fair")).getCode());
            }
        }
    }

    private static <T> T runInThread(java.util.concurrent.Callable<T> body) throws Exception {
        ExecutorService thread = Executors.newSingleThreadExecutor();
        try {
            return thread.submit(body).get(30, TimeUnit.SECONDS);
        } finally {
            thread.shutdownNow();
        }
    }
}
