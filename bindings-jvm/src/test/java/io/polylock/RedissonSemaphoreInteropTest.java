package io.polylock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;

/**
 * polylock's plain semaphore ({@link PolylockClient#getSemaphore(String)}) against real Redisson's RSemaphore on one
 * redis-server: one counter and one channel, so permits taken and given back by either library are counted together
 * and a release by one wakes a waiter of the other.
 */
@EnabledIfEnvironmentVariable(named = "POLYLOCK_TEST_REDIS_URL", matches = "redis://.+")
class RedissonSemaphoreInteropTest {
    private static RedissonClient redisson;
    private static PolylockClient polylock;

    @BeforeAll
    static void connect() {
        org.redisson.config.Config config = new org.redisson.config.Config();
        config.useSingleServer().setAddress(Backends.redisUrl());
        redisson = Redisson.create(config);
        polylock = Polylock.connect(Backends.redisUrl());
    }

    @AfterAll
    static void close() {
        polylock.close();
        redisson.shutdown();
    }

    @Test
    void bothLibrariesCountOnePlainSemaphore() {
        String name = Backends.uniqueName("interop-plain");
        RSemaphore ours = polylock.getSemaphore(name);
        org.redisson.api.RSemaphore theirs = redisson.getSemaphore(name);
        assertEquals(name, ours.getName());
        assertTrue(ours.trySetPermits(3));
        assertFalse(theirs.trySetPermits(5), "Redisson sees polylock's count");
        assertEquals(3, theirs.availablePermits());

        assertTrue(ours.tryAcquire(2));
        assertEquals(1, theirs.availablePermits());
        assertFalse(theirs.tryAcquire(2), "Redisson sees polylock's permits taken");
        assertTrue(theirs.tryAcquire());
        assertFalse(ours.tryAcquire(), "polylock sees Redisson's permit taken");
        assertEquals(0, ours.availablePermits());

        theirs.release(2); // unowned: Redisson gives back what polylock took
        assertEquals(2, ours.availablePermits());
        ours.release();
        assertEquals(3, theirs.availablePermits());

        ours.addPermits(-1);
        assertEquals(2, theirs.availablePermits());
        theirs.addPermits(2);
        assertEquals(4, ours.drainPermits());
        assertEquals(0, theirs.availablePermits());
        assertThrows(IllegalArgumentException.class, () -> ours.tryAcquire(-1));
        redisson.getBucket(name).delete();
    }

    @Test
    void aReleaseByOneLibraryWakesTheOthersWaiter() throws Exception {
        String name = Backends.uniqueName("interop-plain-wake");
        RSemaphore ours = polylock.getSemaphore(name);
        org.redisson.api.RSemaphore theirs = redisson.getSemaphore(name);
        assertTrue(theirs.trySetPermits(1));

        theirs.acquire();
        CompletableFuture<Boolean> ourWaiter = CompletableFuture.supplyAsync(() -> {
            try {
                return ours.tryAcquire(20, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }, runnable -> new Thread(runnable).start());
        Thread.sleep(200);
        assertFalse(ourWaiter.isDone(), "polylock waits while Redisson holds the only permit");
        theirs.release();
        assertTrue(ourWaiter.get(20, TimeUnit.SECONDS), "Redisson's release wakes polylock's waiter");

        CountDownLatch started = new CountDownLatch(1);
        CompletableFuture<Boolean> theirWaiter = CompletableFuture.supplyAsync(() -> {
            started.countDown();
            try {
                return theirs.tryAcquire(20, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }, runnable -> new Thread(runnable).start());
        started.await();
        Thread.sleep(200);
        assertFalse(theirWaiter.isDone(), "Redisson waits while polylock holds the only permit");
        ours.release();
        assertTrue(theirWaiter.get(20, TimeUnit.SECONDS), "polylock's release wakes Redisson's waiter");
        theirs.release();
        assertEquals(1, ours.availablePermits());
        redisson.getBucket(name).delete();
    }

    @Test
    void mixedHoldersOfOnePlainSemaphoreNeverExceedN() throws Exception {
        final int permits = 3;
        String name = Backends.uniqueName("interop-plain-contention");
        RSemaphore ours = polylock.getSemaphore(name);
        org.redisson.api.RSemaphore theirs = redisson.getSemaphore(name);
        assertTrue(theirs.trySetPermits(permits));

        AtomicInteger holding = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        List<CompletableFuture<Void>> workers = new ArrayList<>();
        for (int worker = 0; worker < 8; worker++) {
            boolean polylockSide = worker % 2 == 0;
            workers.add(CompletableFuture.runAsync(() -> {
                try {
                    for (int round = 0; round < 15; round++) {
                        boolean taken = polylockSide
                                ? ours.tryAcquire(30, TimeUnit.SECONDS)
                                : theirs.tryAcquire(30, TimeUnit.SECONDS);
                        assertTrue(taken, "a permit within the wait");
                        int now = holding.incrementAndGet();
                        most.accumulateAndGet(now, Math::max);
                        Thread.sleep(2);
                        holding.decrementAndGet();
                        if (polylockSide) {
                            ours.release();
                        } else {
                            theirs.release();
                        }
                    }
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }, runnable -> new Thread(runnable).start()));
        }
        CompletableFuture.allOf(workers.toArray(new CompletableFuture[0])).get(120, TimeUnit.SECONDS);
        assertTrue(most.get() <= permits, most.get() + " holders at once with " + permits + " permits");
        assertEquals(permits, theirs.availablePermits(), "every permit came back");
        assertEquals(permits, ours.availablePermits());
        redisson.getBucket(name).delete();
    }

    @Test
    void anInterruptedWaitTakesNothing() throws Exception {
        String name = Backends.uniqueName("interop-plain-interrupt");
        RSemaphore ours = polylock.getSemaphore(name);
        assertTrue(ours.trySetPermits(1));
        ours.acquire();
        AtomicInteger interrupted = new AtomicInteger();
        Thread waiter = new Thread(() -> {
            try {
                ours.acquire();
            } catch (InterruptedException e) {
                interrupted.incrementAndGet();
            }
        });
        waiter.start();
        Thread.sleep(200);
        waiter.interrupt();
        waiter.join(10_000);
        assertEquals(1, interrupted.get(), "the interrupt ends the wait");
        ours.release();
        Thread.sleep(200);
        assertEquals(1, ours.availablePermits(), "the interrupted waiter took nothing");
        redisson.getBucket(name).delete();
    }

    @Test
    void otherBackendsRefuseThePlainLayout() {
        try (PolylockClient mem = Polylock.connect("mem://plain-semaphore-jvm")) {
            PolylockException refused = assertThrows(PolylockException.class, () -> mem.getSemaphore("jobs"));
            assertEquals(ErrorCode.UNSUPPORTED, refused.getCode());
        }
    }
}
