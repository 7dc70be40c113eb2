package io.polylock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;

/**
 * {@link PolylockClient#getCountDownLatch(String)} on every backend, and against real Redisson 3.45.1's
 * RCountDownLatch on one redis-server: one key and one channel, so a count set by either library is seen by the
 * other and a count-down by one releases the other's waiters.
 */
class CountDownLatchTest {
    static List<Backends.Backend> backends() {
        return Backends.all();
    }

    @ParameterizedTest
    @MethodSource("backends")
    void countDownsReleaseWaitersAndTheCountStopsAtZero(Backends.Backend backend) throws Exception {
        try (PolylockClient client = backend.connect()) {
            String name = Backends.uniqueName("latch");
            RCountDownLatch latch = client.getCountDownLatch(name);
            assertEquals(name, latch.getName());
            assertEquals(0, latch.getCount(), backend.label);
            assertTrue(latch.await(0, TimeUnit.MILLISECONDS), "a latch never set is open");
            assertTrue(latch.trySetCount(2));
            assertFalse(latch.trySetCount(5), "refused while counting down");
            assertFalse(latch.await(100, TimeUnit.MILLISECONDS), "the wait ran out");
            List<CompletableFuture<Boolean>> waiters = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                waiters.add(CompletableFuture.supplyAsync(() -> {
                    try {
                        return client.getCountDownLatch(name).await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                }));
            }
            latch.countDown();
            assertEquals(1, latch.getCount());
            Thread.sleep(50);
            assertTrue(waiters.stream().noneMatch(CompletableFuture::isDone), "a waiter left at 1");
            latch.countDown();
            for (CompletableFuture<Boolean> waiter : waiters) {
                assertTrue(waiter.get(30, TimeUnit.SECONDS));
            }
            latch.countDown();
            assertEquals(0, latch.getCount(), "never below zero");
            assertThrows(PolylockException.class, () -> latch.trySetCount(0));
        }
    }

    @ParameterizedTest
    @MethodSource("backends")
    void awaitZeroIsTheWaitingFormThatThrowsTimeout(Backends.Backend backend) throws Exception {
        try (PolylockClient client = backend.connect()) {
            RCountDownLatch latch = client.getCountDownLatch(Backends.uniqueName("latch"));
            latch.awaitZero(0, TimeUnit.MILLISECONDS); // a latch never set is open
            assertTrue(latch.trySetCount(1));
            long started = System.nanoTime();
            PolylockException timedOut =
                    assertThrows(PolylockException.class, () -> latch.awaitZero(300, TimeUnit.MILLISECONDS));
            assertEquals(ErrorCode.TIMEOUT, timedOut.getCode(), backend.label);
            assertTrue(System.nanoTime() - started >= TimeUnit.MILLISECONDS.toNanos(250), "it waited");
            assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(PolylockException.class,
                    () -> latch.awaitZero(-5, TimeUnit.MILLISECONDS)).getCode());
            CompletableFuture<Void> waiter = CompletableFuture.runAsync(() -> {
                try {
                    latch.awaitZero(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            latch.countDown();
            waiter.get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void anInterruptStopsTheWait() throws Exception {
        try (PolylockClient client = Polylock.connect("mem://jvm-latch-interrupt")) {
            RCountDownLatch latch = client.getCountDownLatch(Backends.uniqueName("latch"));
            assertTrue(latch.trySetCount(1));
            CompletableFuture<Throwable> thrown = new CompletableFuture<>();
            Thread waiter = new Thread(() -> {
                try {
                    latch.await();
                    thrown.complete(null);
                } catch (Throwable t) {
                    thrown.complete(t);
                }
            });
            waiter.start();
            Thread.sleep(50);
            waiter.interrupt();
            assertTrue(thrown.get(10, TimeUnit.SECONDS) instanceof InterruptedException);
            assertEquals(1, latch.getCount());
        }
    }

    @Test
    @EnabledIfEnvironmentVariable(named = "POLYLOCK_TEST_REDIS_URL", matches = "redis://.+")
    void sharesOneLatchWithRedisson() throws Exception {
        org.redisson.config.Config config = new org.redisson.config.Config();
        config.useSingleServer().setAddress(Backends.redisUrl());
        RedissonClient redisson = Redisson.create(config);
        try (PolylockClient polylock = Polylock.connect(Backends.redisUrl())) {
            String name = Backends.uniqueName("interop-latch");
            RCountDownLatch ours = polylock.getCountDownLatch(name);
            org.redisson.api.RCountDownLatch theirs = redisson.getCountDownLatch(name);

            assertTrue(theirs.trySetCount(2));
            assertEquals(2, ours.getCount(), "polylock reads Redisson's count");
            assertFalse(ours.trySetCount(9), "and is refused while it counts down");
            // A polylock waiter, released by Redisson's count-downs.
            CompletableFuture<Boolean> ourWaiter = CompletableFuture.supplyAsync(() -> {
                try {
                    return ours.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            theirs.countDown();
            assertEquals(1, ours.getCount());
            Thread.sleep(50);
            assertFalse(ourWaiter.isDone());
            theirs.countDown();
            assertTrue(ourWaiter.get(30, TimeUnit.SECONDS));
            assertEquals(0, ours.getCount());

            // A Redisson waiter, released by polylock's count-downs.
            assertTrue(ours.trySetCount(2));
            assertEquals(2, theirs.getCount(), "Redisson reads polylock's count");
            assertFalse(theirs.trySetCount(9));
            CompletableFuture<Boolean> theirWaiter = CompletableFuture.supplyAsync(() -> {
                try {
                    return theirs.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            ours.countDown();
            Thread.sleep(50);
            assertFalse(theirWaiter.isDone());
            ours.countDown();
            assertTrue(theirWaiter.get(30, TimeUnit.SECONDS));
            assertEquals(0, theirs.getCount());
            assertFalse(redisson.getBucket(name).isExists(), "the key is gone at zero");
        } finally {
            redisson.shutdown();
        }
    }
}
