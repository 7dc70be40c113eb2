package io.polylock.spring.integration;

import io.polylock.ErrorCode;
import io.polylock.PolylockClient;
import io.polylock.PolylockException;
import io.polylock.RLock;
import java.util.ConcurrentModificationException;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * Spring Integration's lock registry over a {@link PolylockClient}: {@link #obtain(Object)} gives the distributed
 * lock of a String key as a {@link Lock}, owned by the calling thread and reentrant per thread, as Spring's own
 * registries are. Use it wherever a {@code RedisLockRegistry}, {@code JdbcLockRegistry} or {@code
 * ZookeeperLockRegistry} goes (aggregators, {@code LockRegistryLeaderInitiator}, {@code executeLocked}).
 *
 * <p>A lock is held under polylock's watchdog: its lease (30 s, the URL's {@code lease=}) is renewed every third of
 * it while this client lives, so a holder that dies lets it go at the end of one lease. {@link #renewLock(Object)}
 * therefore has nothing to push forward: it checks that the calling thread still holds the lock (the client hears
 * of a lost lease before the store gives the lock to another) and throws {@link IllegalStateException} if not, as
 * {@code RedisLockRegistry} does.
 *
 * <p>{@link Lock#unlock()} by a thread that does not hold the lock throws {@link IllegalStateException} ("You do
 * not own lock at ..."), and on a hold the store no longer has, {@link ConcurrentModificationException}, as in
 * {@code RedisLockRegistry}. Conditions are not offered.
 */
public final class PolylockLockRegistry implements RenewableLockRegistry, ExpirableLockRegistry {
    private final PolylockClient client;
    private final Map<String, RegistryLock> locks = new ConcurrentHashMap<>();

    /** A registry taking its locks through {@code client}; the client stays the caller's to close. */
    public PolylockLockRegistry(PolylockClient client) {
        this.client = Objects.requireNonNull(client, "client");
    }

    private static String key(Object lockKey) {
        if (!(lockKey instanceof String)) {
            throw new IllegalArgumentException("lock keys of a PolylockLockRegistry are Strings, got "
                    + (lockKey == null ? "null" : lockKey.getClass().getName()));
        }
        return (String) lockKey;
    }

    @Override
    public Lock obtain(Object lockKey) {
        String key = key(lockKey);
        RegistryLock lock = locks.computeIfAbsent(key, name -> new RegistryLock(name, client.getLock(name)));
        lock.lastUsed = System.currentTimeMillis();
        return lock;
    }

    /** Forget the locks obtained more than {@code age} ms ago that no thread of this process holds. */
    @Override
    public void expireUnusedOlderThan(long age) {
        long now = System.currentTimeMillis();
        locks.entrySet().removeIf(entry -> entry.getValue().localHolds.get() == 0
                && now - entry.getValue().lastUsed > age);
    }

    @Override
    public void renewLock(Object lockKey) {
        String key = key(lockKey);
        RegistryLock lock = locks.get(key);
        if (lock == null || !lock.lock.isHeldByCurrentThread()) {
            throw new IllegalStateException("The current thread doesn't own lock at " + key);
        }
    }

    @Override
    public String toString() {
        return "PolylockLockRegistry{client=" + client.getId() + "}";
    }

    /** The {@link Lock} of one key: the calls of polylock's lock, with Spring's exceptions on unlock. */
    private static final class RegistryLock implements Lock {
        final String key;
        final RLock lock;
        /** Holds by threads of this process, so that expireUnusedOlderThan keeps a lock in use. */
        final AtomicInteger localHolds = new AtomicInteger();
        volatile long lastUsed;

        RegistryLock(String key, RLock lock) {
            this.key = key;
            this.lock = lock;
        }

        private boolean held(boolean held) {
            if (held) {
                localHolds.incrementAndGet();
            }
            lastUsed = System.currentTimeMillis();
            return held;
        }

        @Override
        public void lock() {
            lock.lock();
            held(true);
        }

        @Override
        public void lockInterruptibly() throws InterruptedException {
            lock.lockInterruptibly();
            held(true);
        }

        @Override
        public boolean tryLock() {
            return held(lock.tryLock());
        }

        @Override
        public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
            return held(lock.tryLock(Math.max(0, time), unit));
        }

        @Override
        public void unlock() {
            try {
                lock.unlock();
            } catch (IllegalMonitorStateException e) {
                throw new IllegalStateException("You do not own lock at " + key, e);
            } catch (PolylockException e) {
                if (e.getCode() == ErrorCode.LOST) {
                    localHolds.decrementAndGet();
                    throw new ConcurrentModificationException("Lock was released in the store due to expiration. "
                            + "The integrity of data protected by this lock may have been compromised.", e);
                }
                throw e;
            }
            localHolds.decrementAndGet();
        }

        @Override
        public Condition newCondition() {
            throw new UnsupportedOperationException("PolylockLockRegistry locks do not offer conditions");
        }

        @Override
        public String toString() {
            return "PolylockLockRegistry.Lock{key=" + key + ", " + lock + "}";
        }
    }
}
