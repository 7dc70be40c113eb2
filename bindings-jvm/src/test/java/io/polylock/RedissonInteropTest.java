package io.polylock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import org.redisson.Redisson;
import org.redisson.api.RScript;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

/** polylock and real Redisson (org.redisson:redisson) on one redis-server, both ways. */
@EnabledIfEnvironmentVariable(named = "POLYLOCK_TEST_REDIS_URL", matches = "redis://.+")
class RedissonInteropTest {
    /** Far below the 30 s watchdog lease a missed wake-up would wait for. */
    private static final long WAKE_LIMIT_MS = 2_000;

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

    private static List<String> hashFields(String key) {
        return redisson.getScript(StringCodec.INSTANCE)
                .eval(RScript.Mode.READ_ONLY, "return redis.call('hkeys', KEYS[1])", RScript.ReturnType.MULTI,
                        List.of(key));
    }

    @Test
    void redissonAndPolylockLocksExcludeEachOtherWithRedissonsField() throws Exception {
        String name = Backends.uniqueName("interop-exclusion");
        org.redisson.api.RLock theirs = redisson.getLock(name);
        RLock ours = polylock.getLock(name);

        theirs.lock();
        assertFalse(ours.tryLock(), "polylock must not take a lock Redisson holds");
        assertTrue(ours.isLocked());
        theirs.unlock();

        ours.lock();
        assertEquals(List.of(polylock.getId() + ":" + Thread.currentThread().getId()), hashFields(name),
                "the hash field is Redisson's <client uuid>:<thread id>");
        assertFalse(theirs.tryLock(), "Redisson must not take a lock polylock holds");
        assertTrue(theirs.isLocked());
        assertTrue(theirs.remainTimeToLive() > 0);
        ours.unlock();
        assertFalse(theirs.isLocked());
    }

    @Test
    void aPolylockUnlockWakesAWaitingRedissonThreadAtOnce() throws Exception {
        String name = Backends.uniqueName("interop-wake-redisson");
        RLock ours = polylock.getLock(name);
        ours.lock();
        CompletableFuture<Long> waiter = CompletableFuture.supplyAsync(() -> {
            org.redisson.api.RLock theirs = redisson.getLock(name);
            theirs.lock();
            long at = System.nanoTime();
            theirs.unlock();
            return at;
        });
        Thread.sleep(500);
        long released = System.nanoTime();
        ours.unlock();
        long woke = waiter.get(30, TimeUnit.SECONDS);
        long latencyMs = TimeUnit.NANOSECONDS.toMillis(woke - released);
        assertTrue(latencyMs < WAKE_LIMIT_MS, "Redisson woke " + latencyMs + " ms after the release");
    }

    @Test
    void aRedissonUnlockWakesAWaitingPolylockThreadByPubSub() throws Exception {
        String name = Backends.uniqueName("interop-wake-polylock");
        org.redisson.api.RLock theirs = redisson.getLock(name);
        theirs.lock();
        CompletableFuture<Long> waiter = CompletableFuture.supplyAsync(() -> {
            RLock ours = polylock.getLock(name);
            ours.lock();
            long at = System.nanoTime();
            ours.unlock();
            return at;
        });
        Thread.sleep(500);
        long listeners = redisson.getTopic("redisson_lock__channel:{" + name + "}").countSubscribers();
        assertTrue(listeners >= 1, "the polylock waiter listens on Redisson's unlock channel");
        long released = System.nanoTime();
        theirs.unlock();
        long woke = waiter.get(30, TimeUnit.SECONDS);
        long latencyMs = TimeUnit.NANOSECONDS.toMillis(woke - released);
        assertTrue(latencyMs < WAKE_LIMIT_MS, "polylock woke " + latencyMs + " ms after the release");
    }

    @Test
    void redissonsFairLockAndPolylocksFairLockShareOneQueue() throws Exception {
        String name = Backends.uniqueName("interop-fair");
        org.redisson.api.RLock holder = redisson.getFairLock(name);
        holder.lock();
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        List<CompletableFuture<Void>> waiters = new ArrayList<>();
        String[] queue = {"polylock-1", "redisson-1", "polylock-2", "redisson-2"};
        for (String who : queue) {
            waiters.add(CompletableFuture.runAsync(() -> {
                if (who.startsWith("polylock")) {
                    RLock lock = polylock.getFairLock(name);
                    lock.lock();
                    order.add(who);
                    lock.unlock();
                } else {
                    org.redisson.api.RLock lock = redisson.getFairLock(name);
                    lock.lock();
                    order.add(who);
                    lock.unlock();
                }
            }, runnable -> new Thread(runnable).start()));
            Thread.sleep(300); // each waiter joins the queue before the next
        }
        holder.unlock();
        CompletableFuture.allOf(waiters.toArray(new CompletableFuture[0])).get(60, TimeUnit.SECONDS);
        assertEquals(List.of(queue), order, "first come, first served across both libraries");
    }

    @Test
    void redissonFencedLockTokensAndPolylockTokensFormOneIncreasingSequence() {
        String name = Backends.uniqueName("interop-fenced");
        org.redisson.api.RFencedLock theirs = redisson.getFencedLock(name);
        RFencedLock ours = polylock.getFencedLock(name);
        long last = 0;
        for (int round = 0; round < 3; round++) {
            Long redissonToken = theirs.lockAndGetToken();
            theirs.unlock();
            assertTrue(redissonToken > last, "Redisson's token " + redissonToken + " after " + last);
            Long polylockToken = ours.lockAndGetToken();
            assertFalse(theirs.tryLock(), "Redisson's fenced lock sees polylock's hold");
            ours.unlock();
            assertTrue(polylockToken > redissonToken, "polylock's token " + polylockToken + " after " + redissonToken);
            last = polylockToken;
        }
    }
}
