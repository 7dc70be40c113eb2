/*
 * The cases of Spring Integration's own registry tests that apply to any distributed registry (RedisLockRegistryTests
 * and JdbcLockRegistryTests, spring-integration 6.5, Apache License 2.0, https://github.com/spring-projects/spring-integration),
 * run against PolylockLockRegistry. Their checks of the registries' private maps become checks of what
 * expireUnusedOlderThan does to obtain(); "different registries" are registries of different clients (two processes).
 */
package io.polylock.spring.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.polylock.Polylock;
import io.polylock.PolylockClient;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class LockRegistryContract {
    private final String namespace = "si" + TestServers.unique();
    private PolylockClient client;
    private PolylockClient otherClient;

    /** The backend's URL; the contract adds a namespace of its own. */
    abstract String url();

    @BeforeAll
    void connect() {
        client = Polylock.connect(TestServers.withOption(url(), "namespace=" + namespace));
        otherClient = Polylock.connect(TestServers.withOption(url(), "namespace=" + namespace));
    }

    @AfterAll
    void close() {
        if (client != null) {
            client.close();
        }
        if (otherClient != null) {
            otherClient.close();
        }
    }

    PolylockLockRegistry registry() {
        return new PolylockLockRegistry(client);
    }

    /** After expireUnusedOlderThan, the registry forgets its unheld locks: obtain makes a new one. */
    private static void assertForgotten(ExpirableLockRegistry registry, Lock lock, String key) {
        registry.expireUnusedOlderThan(-1000);
        assertThat(registry.obtain(key)).isNotSameAs(lock);
    }

    @Test
    void testLock() {
        PolylockLockRegistry registry = registry();
        Lock lock = null;
        for (int i = 0; i < 10; i++) {
            lock = registry.obtain("foo");
            lock.lock();
            try {
                assertThat(client.getLock("foo").isLocked()).isTrue();
            } finally {
                lock.unlock();
            }
        }
        assertThat(client.getLock("foo").isLocked()).isFalse();
        assertForgotten(registry, lock, "foo");
    }

    @Test
    void testLockInterruptibly() throws Exception {
        PolylockLockRegistry registry = registry();
        Lock lock = null;
        for (int i = 0; i < 10; i++) {
            lock = registry.obtain("foo");
            lock.lockInterruptibly();
            try {
                assertThat(client.getLock("foo").isLocked()).isTrue();
            } finally {
                lock.unlock();
            }
        }
        assertForgotten(registry, lock, "foo");
    }

    @Test
    void testReentrantLock() {
        PolylockLockRegistry registry = registry();
        for (int i = 0; i < 10; i++) {
            Lock lock1 = registry.obtain("foo");
            lock1.lock();
            try {
                Lock lock2 = registry.obtain("foo");
                assertThat(lock2).isSameAs(lock1);
                lock2.lock();
                lock2.unlock();
                assertThat(client.getLock("foo").isLocked()).describedAs("still held once").isTrue();
            } finally {
                lock1.unlock();
            }
        }
        assertThat(client.getLock("foo").isLocked()).isFalse();
    }

    @Test
    void testReentrantLockInterruptibly() throws Exception {
        PolylockLockRegistry registry = registry();
        for (int i = 0; i < 10; i++) {
            Lock lock1 = registry.obtain("foo");
            lock1.lockInterruptibly();
            try {
                Lock lock2 = registry.obtain("foo");
                assertThat(lock2).isSameAs(lock1);
                lock2.lockInterruptibly();
                lock2.unlock();
            } finally {
                lock1.unlock();
            }
        }
        assertThat(client.getLock("foo").isLocked()).isFalse();
    }

    @Test
    void testTwoLocks() throws Exception {
        PolylockLockRegistry registry = registry();
        for (int i = 0; i < 10; i++) {
            Lock lock1 = registry.obtain("foo");
            lock1.lockInterruptibly();
            try {
                Lock lock2 = registry.obtain("bar");
                assertThat(lock2).isNotSameAs(lock1);
                lock2.lockInterruptibly();
                lock2.unlock();
            } finally {
                lock1.unlock();
            }
        }
    }

    @Test
    void testTwoThreadsSecondFailsToGetLock() throws Exception {
        PolylockLockRegistry registry = registry();
        Lock lock1 = registry.obtain("foo");
        lock1.lockInterruptibly();
        AtomicBoolean locked = new AtomicBoolean();
        CountDownLatch latch = new CountDownLatch(1);
        ExecutorService executorService = Executors.newSingleThreadExecutor();
        try {
            Future<Object> result = executorService.submit(() -> {
                Lock lock2 = registry.obtain("foo");
                locked.set(lock2.tryLock(200, TimeUnit.MILLISECONDS));
                latch.countDown();
                try {
                    lock2.unlock();
                } catch (IllegalStateException ise) {
                    return ise;
                }
                return null;
            });
            assertThat(latch.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(locked.get()).isFalse();
            lock1.unlock();
            Object ise = result.get(10, TimeUnit.SECONDS);
            assertThat(ise).isInstanceOf(IllegalStateException.class);
            assertThat(((Exception) ise).getMessage()).contains("You do not own lock at");
        } finally {
            executorService.shutdown();
        }
    }

    @Test
    void testTwoThreads() throws Exception {
        PolylockLockRegistry registry = registry();
        Lock lock1 = registry.obtain("foo");
        AtomicBoolean locked = new AtomicBoolean();
        CountDownLatch latch1 = new CountDownLatch(1);
        CountDownLatch latch2 = new CountDownLatch(1);
        CountDownLatch latch3 = new CountDownLatch(1);
        lock1.lockInterruptibly();
        ExecutorService executorService = Executors.newSingleThreadExecutor();
        try {
            executorService.execute(() -> {
                Lock lock2 = registry.obtain("foo");
                try {
                    latch1.countDown();
                    lock2.lockInterruptibly();
                    latch2.await(10, TimeUnit.SECONDS);
                    locked.set(true);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    lock2.unlock();
                    latch3.countDown();
                }
            });
            assertThat(latch1.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(locked.get()).isFalse();
            lock1.unlock();
            latch2.countDown();
            assertThat(latch3.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(locked.get()).isTrue();
        } finally {
            executorService.shutdown();
        }
    }

    @Test
    void testTwoThreadsDifferentRegistries() throws Exception {
        PolylockLockRegistry registry1 = registry();
        PolylockLockRegistry registry2 = new PolylockLockRegistry(otherClient);
        Lock lock1 = registry1.obtain("foo");
        AtomicBoolean locked = new AtomicBoolean();
        CountDownLatch latch1 = new CountDownLatch(1);
        CountDownLatch latch2 = new CountDownLatch(1);
        CountDownLatch latch3 = new CountDownLatch(1);
        lock1.lockInterruptibly();
        ExecutorService executorService = Executors.newSingleThreadExecutor();
        try {
            executorService.execute(() -> {
                Lock lock2 = registry2.obtain("foo");
                try {
                    latch1.countDown();
                    lock2.lockInterruptibly();
                    latch2.await(10, TimeUnit.SECONDS);
                    locked.set(true);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    lock2.unlock();
                    latch3.countDown();
                }
            });
            assertThat(latch1.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(locked.get()).isFalse();
            lock1.unlock();
            latch2.countDown();
            assertThat(latch3.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(locked.get()).isTrue();
        } finally {
            executorService.shutdown();
        }
    }

    @Test
    void testTwoThreadsWrongOneUnlocks() throws Exception {
        PolylockLockRegistry registry = registry();
        Lock lock = registry.obtain("foo");
        lock.lockInterruptibly();
        CountDownLatch latch = new CountDownLatch(1);
        ExecutorService executorService = Executors.newSingleThreadExecutor();
        try {
            Future<Object> result = executorService.submit(() -> {
                try {
                    lock.unlock();
                } catch (IllegalStateException ise) {
                    latch.countDown();
                    return ise;
                }
                return null;
            });
            assertThat(latch.await(10, TimeUnit.SECONDS)).isTrue();
            lock.unlock();
            Object ise = result.get(10, TimeUnit.SECONDS);
            assertThat(ise).isInstanceOf(IllegalStateException.class);
            assertThat(((Exception) ise).getMessage()).contains("You do not own lock at");
        } finally {
            executorService.shutdown();
        }
    }

    @Test
    void testExpireTwoRegistries() {
        // Spring's case lets a short TTL run out; here the first holder's client goes away instead.
        PolylockClient dying = Polylock.connect(TestServers.withOption(url(), "namespace=" + namespace));
        PolylockLockRegistry registry1 = new PolylockLockRegistry(dying);
        PolylockLockRegistry registry2 = registry();
        Lock lock1 = registry1.obtain("foo");
        Lock lock2 = registry2.obtain("foo");
        assertThat(lock1.tryLock()).isTrue();
        assertThat(lock2.tryLock()).isFalse();
        dying.close();
        assertThat(lock2.tryLock()).isTrue();
        lock2.unlock();
    }

    @Test
    void testExceptionOnExpire() {
        // The hold leaves the store while the thread thinks it holds it (here: forced out by another client).
        PolylockLockRegistry registry = registry();
        Lock lock1 = registry.obtain("foo");
        assertThat(lock1.tryLock()).isTrue();
        assertThat(otherClient.getLock("foo").forceUnlock()).isTrue();
        assertThatThrownBy(lock1::unlock)
                .isInstanceOf(ConcurrentModificationException.class)
                .hasMessageContaining("Lock was released in the store due to expiration.");
    }

    @Test
    void testLockRenew() {
        RenewableLockRegistry registry = registry();
        Lock lock = registry.obtain("foo");
        assertThat(lock.tryLock()).isTrue();
        try {
            registry.renewLock("foo");
        } finally {
            lock.unlock();
        }
    }

    @Test
    void testLockRenewLockNotOwned() {
        RenewableLockRegistry registry = registry();
        registry.obtain("foo");
        assertThatExceptionOfType(IllegalStateException.class).isThrownBy(() -> registry.renewLock("foo"));
    }

    @Test
    void testLockRenewAfterUnlockOrOnAnotherThread() throws Exception {
        RenewableLockRegistry registry = registry();
        Lock lock = registry.obtain("foo");
        lock.lock();
        ExecutorService executorService = Executors.newSingleThreadExecutor();
        try {
            Future<?> other = executorService.submit(() -> registry.renewLock("foo"));
            assertThatThrownBy(other::get).hasCauseInstanceOf(IllegalStateException.class);
        } finally {
            executorService.shutdown();
        }
        lock.unlock();
        assertThatExceptionOfType(IllegalStateException.class).isThrownBy(() -> registry.renewLock("foo"));
    }

    @Test
    void expireKeepsHeldLocks() {
        PolylockLockRegistry registry = registry();
        Lock lock = registry.obtain("foo");
        lock.lock();
        registry.expireUnusedOlderThan(-1000);
        assertThat(registry.obtain("foo")).isSameAs(lock);
        lock.unlock();
        assertForgotten(registry, lock, "foo");
    }

    @Test
    void executeLockedRunsUnderTheLock() throws Exception {
        PolylockLockRegistry registry = registry();
        AtomicBoolean ran = new AtomicBoolean();
        registry.executeLocked("foo", () -> ran.set(client.getLock("foo").isHeldByCurrentThread()));
        assertThat(ran.get()).isTrue();
        assertThat(client.getLock("foo").isLocked()).isFalse();

        Lock held = new PolylockLockRegistry(otherClient).obtain("foo");
        held.lock();
        try {
            assertThatThrownBy(() -> registry.executeLocked("foo", Duration.ofMillis(50), () -> ran.set(false)))
                    .isInstanceOf(TimeoutException.class);
            assertThat(ran.get()).isTrue();
        } finally {
            held.unlock();
        }
    }

    @Test
    void keysAreStrings() {
        assertThatThrownBy(() -> registry().obtain(42)).isInstanceOf(IllegalArgumentException.class);
    }
}
