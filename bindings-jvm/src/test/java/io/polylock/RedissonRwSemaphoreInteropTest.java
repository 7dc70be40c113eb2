package io.polylock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import org.redisson.Redisson;
import org.redisson.api.RReadWriteLock;
import org.redisson.api.RScript;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

/**
 * polylock's read-write locks and permit semaphores against real Redisson (RReadWriteLock, RPermitExpirableSemaphore)
 * on one redis-server: one layout, so readers share, writers exclude, and permits are counted together.
 */
@EnabledIfEnvironmentVariable(named = "POLYLOCK_TEST_REDIS_URL", matches = "redis://.+")
class RedissonRwSemaphoreInteropTest {
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

    private static String ownField() {
        return polylock.getId() + ":" + Thread.currentThread().getId();
    }

    @Test
    void aPolylockReaderAndARedissonReaderShare() {
        String name = Backends.uniqueName("interop-rw-share");
        RLock ours = polylock.getReadWriteLock(name).readLock();
        RReadWriteLock theirs = redisson.getReadWriteLock(name);

        ours.lock();
        assertTrue(hashFields(name).contains(ownField()), "the reader field is Redisson's <client uuid>:<thread id>");
        assertTrue(theirs.readLock().tryLock(), "Redisson reads beside a polylock reader");
        assertTrue(theirs.readLock().isLocked());
        theirs.readLock().unlock();
        ours.unlock();
        assertTrue(hashFields(name).isEmpty(), "the last reader's release deletes the hash");

        assertTrue(theirs.readLock().tryLock());
        assertTrue(ours.tryLock(), "polylock reads beside a Redisson reader");
        ours.unlock();
        theirs.readLock().unlock();
        assertTrue(hashFields(name).isEmpty());
    }

    @Test
    void aRedissonWriterExcludesPolylockReadersAndThePolylockWriterExcludesRedissonReaders() throws Exception {
        String name = Backends.uniqueName("interop-rw-exclude");
        RReadWriteLock theirs = redisson.getReadWriteLock(name);
        io.polylock.RReadWriteLock ours = polylock.getReadWriteLock(name);

        theirs.writeLock().lock();
        assertFalse(ours.readLock().tryLock(), "a Redisson writer keeps polylock readers out");
        assertFalse(ours.writeLock().tryLock(), "and polylock writers");
        // A waiting polylock reader is let in by Redisson's write unlock (published "1").
        CompletableFuture<Boolean> waiting = CompletableFuture.supplyAsync(() -> {
            RLock read = polylock.getReadWriteLock(name).readLock();
            try {
                boolean got = read.tryLock(20, TimeUnit.SECONDS);
                if (got) {
                    read.unlock();
                }
                return got;
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }, runnable -> new Thread(runnable).start());
        Thread.sleep(300);
        assertFalse(waiting.isDone(), "the polylock reader waits for the Redisson writer");
        theirs.writeLock().unlock();
        assertTrue(waiting.get(30, TimeUnit.SECONDS), "the polylock reader got in after Redisson's write unlock");

        ours.writeLock().lock();
        assertTrue(hashFields(name).contains(ownField() + ":write"), "the writer field is Redisson's");
        assertFalse(theirs.readLock().tryLock(), "a polylock writer keeps Redisson readers out");
        assertFalse(theirs.writeLock().tryLock(), "and Redisson writers");
        assertTrue(theirs.writeLock().isLocked());
        ours.writeLock().unlock();
        assertTrue(theirs.writeLock().tryLock(), "free again for Redisson");
        theirs.writeLock().unlock();

        ours.readLock().lock();
        assertFalse(theirs.writeLock().tryLock(), "a polylock reader keeps Redisson writers out");
        ours.readLock().unlock();
        assertTrue(theirs.writeLock().tryLock());
        theirs.writeLock().unlock();
    }

    @Test
    void aRedissonReadUnlockNeverRemovesALivePolylockReader() {
        String name = Backends.uniqueName("interop-rw-unlock");
        RLock ours = polylock.getReadWriteLock(name).readLock();
        RReadWriteLock theirs = redisson.getReadWriteLock(name);

        ours.lock();
        for (int round = 0; round < 3; round++) {
            assertTrue(theirs.readLock().tryLock());
            theirs.readLock().unlock();
            // Redisson recomputed the hash's expiry from every reader's rwlock_timeout keys, ours included.
            assertTrue(hashFields(name).contains(ownField()), "the polylock reader is still in the hash");
            assertTrue(ours.isHeldByCurrentThread());
            assertFalse(theirs.writeLock().tryLock(), "so a Redisson writer still waits");
            Long pttl = redisson.getScript(StringCodec.INSTANCE).eval(RScript.Mode.READ_ONLY,
                    "return redis.call('pttl', KEYS[1])", RScript.ReturnType.INTEGER,
                    List.of("{" + name + "}:" + ownField() + ":rwlock_timeout:1"));
            assertTrue(pttl > 0, "the polylock reader's rwlock_timeout key lives on: " + pttl);
        }
        ours.unlock();
        assertTrue(theirs.writeLock().tryLock());
        theirs.writeLock().unlock();
    }

    @Test
    void mixedPermitsOnOneRPermitExpirableSemaphoreNeverExceedN() throws Exception {
        final int permits = 3;
        String name = Backends.uniqueName("interop-semaphore");
        org.redisson.api.RPermitExpirableSemaphore theirs = redisson.getPermitExpirableSemaphore(name);
        assertTrue(theirs.trySetPermits(permits));
        RPermitExpirableSemaphore ours = polylock.getPermitExpirableSemaphore(name);
        assertTrue(ours.trySetPermits(permits));

        // Exact accounting: two of ours and one of theirs fill it, for both libraries.
        String ourFirst = ours.tryAcquire();
        String ourSecond = ours.tryAcquire();
        String theirFirst = theirs.tryAcquire();
        assertNotNull(ourFirst);
        assertNotNull(ourSecond);
        assertNotNull(theirFirst);
        assertNull(ours.tryAcquire(), "polylock sees Redisson's permit");
        assertNull(theirs.tryAcquire(), "Redisson sees polylock's permits");
        assertEquals(0, theirs.availablePermits());
        ours.release(ourFirst);
        assertEquals(1, theirs.availablePermits());
        theirs.release(theirFirst);
        ours.release(ourSecond);
        assertEquals(permits, theirs.availablePermits());

        // Contention: threads of both libraries, never more than N holders at once.
        AtomicInteger holding = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        List<CompletableFuture<Void>> workers = new ArrayList<>();
        for (int worker = 0; worker < 6; worker++) {
            boolean polylockSide = worker % 2 == 0;
            workers.add(CompletableFuture.runAsync(() -> {
                try {
                    for (int round = 0; round < 10; round++) {
                        String id = polylockSide
                                ? ours.tryAcquire(30, -1, TimeUnit.SECONDS)
                                : theirs.tryAcquire(30, TimeUnit.SECONDS);
                        assertNotNull(id, "a permit within the wait");
                        int now = holding.incrementAndGet();
                        most.accumulateAndGet(now, Math::max);
                        Thread.sleep(2);
                        holding.decrementAndGet();
                        if (polylockSide) {
                            ours.release(id);
                        } else {
                            theirs.release(id);
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
    }
}
