package io.polylock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.polylock.Backends.Backend;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Issue 18's multi-lock through Redisson's getMultiLock shape, on every backend. */
class MultiLockTest {
    static Stream<Backend> backends() {
        return Backends.all().stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void oppositeOrdersNeverDeadlock(Backend backend) throws Exception {
        String x = Backends.uniqueName("multi-x");
        String y = Backends.uniqueName("multi-y");
        String z = Backends.uniqueName("multi-z");
        try (PolylockClient a = backend.connect(); PolylockClient b = backend.connect()) {
            MultiLock forward = a.getMultiLock(a.getLock(x), a.getLock(y), a.getLock(z));
            MultiLock backward = b.getMultiLock(b.getLock(z), b.getLock(y), b.getLock(x));
            AtomicInteger inside = new AtomicInteger();
            AtomicInteger overlaps = new AtomicInteger();
            ExecutorService pool = Executors.newFixedThreadPool(4);
            try {
                List<Future<?>> done = new ArrayList<>();
                for (int t = 0; t < 4; t++) {
                    MultiLock multi = t % 2 == 0 ? forward : backward;
                    done.add(pool.submit(() -> {
                        for (int i = 0; i < 5; i++) {
                            assertTrue(multi.tryLock(60, -1, TimeUnit.SECONDS), "no deadlock within the deadline");
                            try {
                                assertTrue(multi.isHeldByCurrentThread());
                                if (inside.incrementAndGet() != 1) {
                                    overlaps.incrementAndGet();
                                }
                                Thread.sleep(2);
                                inside.decrementAndGet();
                            } finally {
                                multi.unlock();
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> future : done) {
                    future.get(120, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }
            assertEquals(0, overlaps.get(), "the multi-locks excluded each other");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void aFailedWaitLeavesNothingHeldAndEachPartHasItsToken(Backend backend) throws Exception {
        String free = Backends.uniqueName("multi-free");
        String busy = Backends.uniqueName("multi-busy");
        try (PolylockClient a = backend.connect(); PolylockClient b = backend.connect()) {
            RLock busyByB = b.getLock(busy);
            CountDownLatch held = new CountDownLatch(1);
            CountDownLatch giveBack = new CountDownLatch(1);
            Thread holder = new Thread(() -> {
                busyByB.lock();
                held.countDown();
                try {
                    giveBack.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                busyByB.unlock();
            });
            holder.start();
            assertTrue(held.await(30, TimeUnit.SECONDS));
            MultiLock multi = a.getMultiLock(a.getLock(free), a.getLock(busy));
            assertFalse(multi.tryLock(200, -1, TimeUnit.MILLISECONDS), "one part is held elsewhere");
            assertFalse(multi.isHeldByCurrentThread());
            RLock freePart = a.getLock(free);
            assertFalse(freePart.isLocked(), "the part taken before the failure was given back");
            assertNull(multi.getTokens()[0]);
            giveBack.countDown();
            holder.join(30_000);

            assertTrue(multi.tryLock(5, -1, TimeUnit.SECONDS));
            Long[] tokens = multi.getTokens();
            assertNotNull(tokens[0]);
            assertNotNull(tokens[1]);
            assertTrue(multi.tryLock(), "reentrant per part for the owner thread");
            multi.unlock();
            assertTrue(multi.isHeldByCurrentThread());
            multi.unlock();
            assertFalse(freePart.isLocked());
            assertThrows(IllegalMonitorStateException.class, multi::unlock);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void badPartsAreRefusedWhereTheMultiLockIsMade(Backend backend) {
        try (PolylockClient a = backend.connect(); PolylockClient b = backend.connect()) {
            String name = Backends.uniqueName("multi-bad");
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> a.getMultiLock()).getCode());
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> a.getMultiLock(a.getLock(name), b.getLock("other")))
                            .getCode());
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> a.getMultiLock(a.getLock(name), a.getLock(name)))
                            .getCode());
        }
    }
}
