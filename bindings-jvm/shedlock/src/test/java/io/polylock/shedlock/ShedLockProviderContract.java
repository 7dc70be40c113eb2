/*
 * The cases of ShedLock's own provider contract, AbstractLockProviderIntegrationTest and FuzzTester (shedlock-test-support,
 * Apache License 2.0, https://github.com/lukas-krecan/ShedLock), which ShedLock does not publish for 6.x: the same steps
 * and assertions, with lock names of a namespace of this run's own (the servers are shared).
 */
package io.polylock.shedlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.polylock.ErrorCode;
import io.polylock.Polylock;
import io.polylock.PolylockClient;
import io.polylock.PolylockException;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.LockingTaskExecutor;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class ShedLockProviderContract {
    /** A new name per test, as ShedLock's per-method test instances have. */
    protected String LOCK_NAME1;
    static final Duration LOCK_AT_LEAST_FOR = Duration.of(2, ChronoUnit.SECONDS);

    private final String namespace = "shed" + TestServers.unique();
    private PolylockClient client;
    private LockProvider provider;

    /** The backend's URL; the contract adds a namespace of its own. */
    abstract String url();

    @BeforeAll
    void connect() {
        client = Polylock.connect(TestServers.withOption(url(), "namespace=" + namespace));
        provider = new PolylockLockProvider(client);
    }

    @BeforeEach
    void newName() {
        LOCK_NAME1 = UUID.randomUUID().toString().substring(0, 20);
    }

    @AfterAll
    void close() {
        if (client != null) {
            client.close();
        }
    }

    LockProvider getLockProvider() {
        return provider;
    }

    void assertUnlocked(String lockName) {
        assertThat(client.getLock(lockName).isLocked()).describedAs(lockName + " is free").isFalse();
    }

    void assertLocked(String lockName) {
        assertThat(client.getLock(lockName).isLocked()).describedAs(lockName + " is held").isTrue();
    }

    // ---- AbstractLockProviderIntegrationTest

    @Test
    void shouldCreateLock() {
        Optional<SimpleLock> lock = getLockProvider().lock(lockConfig(LOCK_NAME1));
        assertThat(lock).isNotEmpty();

        assertLocked(LOCK_NAME1);
        lock.get().unlock();
        assertUnlocked(LOCK_NAME1);
    }

    @Test
    void shouldNotReturnSecondLock() {
        LockProvider lockProvider = getLockProvider();
        Optional<SimpleLock> lock = lockProvider.lock(lockConfig(LOCK_NAME1));
        assertThat(lock).isNotEmpty();
        assertThat(lockProvider.lock(lockConfig(LOCK_NAME1))).isEmpty();
        lock.get().unlock();
    }

    @Test
    void shouldCreateTwoIndependentLocks() {
        Optional<SimpleLock> lock1 = getLockProvider().lock(lockConfig(LOCK_NAME1));
        assertThat(lock1).isNotEmpty();

        Optional<SimpleLock> lock2 = getLockProvider().lock(lockConfig("name2"));
        assertThat(lock2).isNotEmpty();

        lock1.get().unlock();
        lock2.get().unlock();
    }

    @Test
    void shouldLockTwiceInARow() {
        LockProvider lockProvider = getLockProvider();
        Optional<SimpleLock> lock1 = lockProvider.lock(lockConfig(LOCK_NAME1));
        assertThat(lock1).isNotEmpty();
        lock1.get().unlock();

        Optional<SimpleLock> lock2 = lockProvider.lock(lockConfig(LOCK_NAME1));
        assertThat(lock2).isNotEmpty();
        lock2.get().unlock();
    }

    @Test
    void shouldTimeout() throws InterruptedException {
        // ShedLock's case: the lease of lockAtMostFor ends a lock nobody releases (the sleep lets it run out).
        Duration lockAtMostFor = Duration.ofMillis(50);
        LockConfiguration configWithShortTimeout = lockConfig(LOCK_NAME1, lockAtMostFor, Duration.ZERO);
        Optional<SimpleLock> lock1 = getLockProvider().lock(configWithShortTimeout);
        assertThat(lock1).isNotEmpty();

        Thread.sleep(lockAtMostFor.toMillis() * 2);
        assertUnlocked(LOCK_NAME1);

        Optional<SimpleLock> lock2 = getLockProvider().lock(lockConfig(LOCK_NAME1, Duration.ofMillis(50), Duration.ZERO));
        assertThat(lock2).isNotEmpty();
        lock2.get().unlock();
    }

    @Test
    void shouldBeAbleToLockRightAfterUnlock() {
        LockConfiguration lockConfiguration = lockConfig(LOCK_NAME1);
        for (int i = 0; i < 10; i++) {
            Optional<SimpleLock> lock = getLockProvider().lock(lockConfiguration);
            assertThat(lock).describedAs("Successfully locked " + i).isNotEmpty();
            assertThat(getLockProvider().lock(lockConfiguration)).isEmpty();
            lock.get().unlock();
        }
    }

    @Test
    void shouldLockAtLeastFor() throws InterruptedException {
        // Lock for LOCK_AT_LEAST_FOR - we do not expect the lock to be released before this time
        Optional<SimpleLock> lock1 =
                getLockProvider().lock(lockConfig(LOCK_NAME1, LOCK_AT_LEAST_FOR.multipliedBy(2), LOCK_AT_LEAST_FOR));
        assertThat(lock1).describedAs("Should be locked").isNotEmpty();
        lock1.get().unlock();

        // Even though we have unlocked the lock, it will be held for some time
        assertThat(getLockProvider().lock(lockConfig(LOCK_NAME1)))
                .describedAs("Can not acquire lock, grace period did not pass yet")
                .isEmpty();

        // Let's wait for the lock to be automatically released (ShedLock's sleep: time must pass)
        Thread.sleep(LOCK_AT_LEAST_FOR.toMillis() + 100);

        Optional<SimpleLock> lock3 = getLockProvider().lock(lockConfig(LOCK_NAME1));
        assertThat(lock3).describedAs("Can acquire the lock after grace period").isNotEmpty();
        lock3.get().unlock();
    }

    // ---- FuzzTester: 8 threads, two jobs, a counter only the lock keeps consistent

    private static final int THREADS = 8;
    private static final int ITERATIONS = 100;
    private static final int SHORT_ITERATION = 10;

    @Test
    void fuzzTestShouldPass() throws Exception {
        LockingTaskExecutor executor = new DefaultLockingTaskExecutor(getLockProvider());
        ExecutorService threads = Executors.newFixedThreadPool(THREADS);
        try {
            int[] iterations = new int[THREADS];
            java.util.Arrays.fill(iterations, ITERATIONS);
            iterations[0] = SHORT_ITERATION;
            Job job1 = new Job("lock1");
            Job job2 = new Job("lock2");
            List<Callable<Void>> tasks = new ArrayList<>();
            for (int i = 0; i < THREADS; i++) {
                int n = iterations[i];
                Job job = i % 2 == 0 ? job1 : job2;
                tasks.add(() -> {
                    for (AtomicInteger done = new AtomicInteger(); done.get() < n; ) {
                        executor.executeWithLock((Runnable) () -> {
                            int value = job.counter;
                            sleepQuietly(1); // the work: a lost update shows if the lock lets two in
                            job.counter = value + 1;
                            done.incrementAndGet();
                        }, job.configuration());
                    }
                    return null;
                });
            }
            for (Future<Void> future : threads.invokeAll(tasks)) {
                future.get();
            }
            assertThat(job2.counter).isEqualTo(THREADS / 2 * ITERATIONS);
            assertThat(job1.counter).isEqualTo((THREADS / 2 - 1) * ITERATIONS + SHORT_ITERATION);
        } finally {
            threads.shutdownNow();
        }
    }

    private static final class Job {
        final String name;
        volatile int counter;

        Job(String name) {
            this.name = name;
        }

        LockConfiguration configuration() {
            return new LockConfiguration(ClockProvider.now(), name, Duration.ofMinutes(5), Duration.ofMillis(5));
        }
    }

    // ---- polylock's own cases

    @Test
    void anUnlockAfterTheLeaseRanOutSaysTheLockWasLost() throws InterruptedException {
        // The job overran lockAtMostFor: its lock was not its own to the end, and unlock says so (loud, as every
        // polylock binding is). The lock is free for the next run.
        SimpleLock late = getLockProvider().lock(lockConfig(LOCK_NAME1, Duration.ofMillis(50), Duration.ZERO))
                .orElseThrow();
        Thread.sleep(100); // the lease must run out
        assertThatThrownBy(late::unlock)
                .isInstanceOfSatisfying(PolylockException.class, e -> assertThat(e.getCode()).isEqualTo(ErrorCode.LOST));
        for (int i = 0; i < 3; i++) {
            SimpleLock lock = getLockProvider().lock(lockConfig(LOCK_NAME1)).orElse(null);
            assertThat(lock).describedAs("run " + i + " after the lease ran out").isNotNull();
            lock.unlock();
        }
    }

    @Test
    void aLockWhoseLeaseRanOutIsTakenAgainAndAgain() throws InterruptedException {
        // A node died holding the lock (never unlocked): after lockAtMostFor every later run still gets it.
        assertThat(getLockProvider().lock(lockConfig(LOCK_NAME1, Duration.ofMillis(50), Duration.ZERO))).isNotEmpty();
        Thread.sleep(100); // the lease must run out
        for (int i = 0; i < 3; i++) {
            SimpleLock lock = getLockProvider().lock(lockConfig(LOCK_NAME1)).orElse(null);
            assertThat(lock).describedAs("run " + i + " after the lease ran out").isNotNull();
            lock.unlock();
        }
    }

    @Test
    void extendIsRefusedAsShedLockSaysAndTheLockStaysUsable() {
        SimpleLock lock = getLockProvider().lock(lockConfig(LOCK_NAME1)).orElseThrow();
        assertThatThrownBy(() -> lock.extend(Duration.ofMinutes(1), Duration.ZERO))
                .isInstanceOf(UnsupportedOperationException.class);
        assertLocked(LOCK_NAME1);
        lock.unlock();
        assertUnlocked(LOCK_NAME1);
    }

    @Test
    void unlockTwiceIsAnError() {
        SimpleLock lock = getLockProvider().lock(lockConfig(LOCK_NAME1)).orElseThrow();
        lock.unlock();
        assertThatThrownBy(lock::unlock).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void anotherThreadMayUnlock() throws Exception {
        SimpleLock lock = getLockProvider().lock(lockConfig(LOCK_NAME1)).orElseThrow();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch unlocked = new CountDownLatch(1);
        Thread other = new Thread(() -> {
            try {
                lock.unlock();
            } catch (Throwable e) {
                failure.set(e);
            } finally {
                unlocked.countDown();
            }
        });
        other.start();
        unlocked.await();
        assertThat(failure.get()).isNull();
        assertUnlocked(LOCK_NAME1);
    }

    @Test
    void anotherClientIsExcluded() {
        SimpleLock lock = getLockProvider().lock(lockConfig(LOCK_NAME1)).orElseThrow();
        try (PolylockClient other = Polylock.connect(
                TestServers.withOption(url(), "namespace=" + namespace))) {
            assertThat(new PolylockLockProvider(other).lock(lockConfig(LOCK_NAME1))).isEmpty();
            lock.unlock();
            SimpleLock second = new PolylockLockProvider(other).lock(lockConfig(LOCK_NAME1)).orElseThrow();
            assertThat(getLockProvider().lock(lockConfig(LOCK_NAME1))).isEmpty();
            second.unlock();
        }
    }

    static void sleepQuietly(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    static LockConfiguration lockConfig(String name) {
        return lockConfig(name, Duration.of(5, ChronoUnit.MINUTES), Duration.ZERO);
    }

    static LockConfiguration lockConfig(String name, Duration lockAtMostFor, Duration lockAtLeastFor) {
        return new LockConfiguration(ClockProvider.now(), name, lockAtMostFor, lockAtLeastFor);
    }
}
