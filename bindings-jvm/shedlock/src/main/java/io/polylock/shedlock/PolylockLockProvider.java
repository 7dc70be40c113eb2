package io.polylock.shedlock;

import io.polylock.ErrorCode;
import io.polylock.PolylockClient;
import io.polylock.PolylockException;
import io.polylock.RLock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import net.javacrumbs.shedlock.core.AbstractSimpleLock;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * ShedLock's {@link LockProvider} over a {@link PolylockClient}: replace the provider bean and keep every
 * {@code @SchedulerLock}.
 *
 * <p>{@link #lock(LockConfiguration)} tries the lock once, without waiting, and holds it for a fixed lease of
 * {@code lockAtMostFor} with no watchdog: if this process dies, the lock ends at {@code lockAtMostFor}, as ShedLock
 * promises. It returns {@link Optional#empty()} when the lock is held elsewhere. {@link SimpleLock#unlock()} honours
 * {@code lockAtLeastFor}: the lock is given back at once if {@code lockedAt + lockAtLeastFor} has passed, else at that
 * time by a daemon thread (should the process die first, the lease still ends the lock).
 *
 * <p>On PostgreSQL and MySQL/MariaDB the lock is polylock's lease lock, whose row is ShedLock's own {@code shedlock}
 * row (the URL's {@code table=} names another table), so nodes still running ShedLock's JDBC providers on that table
 * and nodes running this provider exclude each other. Other backends keep the lock in polylock's layout there (a
 * Redisson lock on Redis, etcd's and Curator's recipes, polylock's SQLite tables).
 *
 * <p>{@link SimpleLock#extend} is not offered: the binding cannot renew a fixed lease, so it throws {@link
 * UnsupportedOperationException}, as ShedLock's {@code SimpleLock} contract says for providers that cannot extend.
 */
public final class PolylockLockProvider implements LockProvider {
    private static final Logger LOG = LoggerFactory.getLogger(PolylockLockProvider.class);

    /**
     * Owners of ShedLock holds. A ShedLock lock belongs to one acquisition, not to a thread: the same thread asking
     * again must be refused (a thread id would re-enter), and the release may run on another thread. Java thread ids
     * are positive, so ids counted up from {@code Long.MIN_VALUE} are never a thread's and never reused.
     */
    private static final AtomicLong OWNERS = new AtomicLong(Long.MIN_VALUE);

    private static final class Releases {
        /** The daemon thread that gives locks back at the end of their lockAtLeastFor. */
        static final ScheduledExecutorService EXECUTOR = newExecutor();

        private static ScheduledExecutorService newExecutor() {
            ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1, task -> {
                Thread thread = new Thread(task, "polylock-shedlock-release");
                thread.setDaemon(true);
                return thread;
            });
            executor.setRemoveOnCancelPolicy(true);
            return executor;
        }
    }

    private final PolylockClient client;
    private final boolean shedLockRows;

    /** A provider taking its locks through {@code client}; the client stays the caller's to close. */
    public PolylockLockProvider(PolylockClient client) {
        this.client = Objects.requireNonNull(client, "client");
        this.shedLockRows = offersLeaseLocks(client);
    }

    /** Whether the backend keeps lease locks (ShedLock's rows): the SQL backends do, the others refuse the kind. */
    private static boolean offersLeaseLocks(PolylockClient client) {
        try {
            client.getLeaseLock("shedlock");
            return true;
        } catch (PolylockException e) {
            if (e.getCode() == ErrorCode.UNSUPPORTED) {
                return false;
            }
            throw e;
        }
    }

    private RLock lockOf(String name) {
        return shedLockRows ? client.getLeaseLock(name) : client.getLock(name);
    }

    @Override
    public Optional<SimpleLock> lock(LockConfiguration configuration) {
        Objects.requireNonNull(configuration, "configuration");
        RLock lock = lockOf(configuration.getName());
        long owner = OWNERS.getAndIncrement();
        long leaseMs = configuration.getLockAtMostFor().toMillis();
        boolean held = await(lock.tryLockAsync(0, leaseMs, TimeUnit.MILLISECONDS, owner));
        return held ? Optional.of(new Hold(configuration, lock, owner)) : Optional.empty();
    }

    @Override
    public String toString() {
        return "PolylockLockProvider{client=" + client.getId() + (shedLockRows ? ", shedlock rows" : "") + "}";
    }

    private static <T> T await(java.util.concurrent.CompletableFuture<T> future) {
        try {
            return future.join();
        } catch (CompletionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException) {
                throw (RuntimeException) cause;
            }
            if (cause instanceof Error) {
                throw (Error) cause;
            }
            throw e;
        }
    }

    /** One ShedLock hold: a lock, its owner, and the configuration it was taken with. */
    private static final class Hold extends AbstractSimpleLock {
        private final RLock lock;
        private final long owner;

        Hold(LockConfiguration configuration, RLock lock, long owner) {
            super(configuration);
            this.lock = lock;
            this.owner = owner;
        }

        @Override
        protected void doUnlock() {
            Instant now = ClockProvider.now();
            Duration left = Duration.between(now, lockConfiguration.getLockAtLeastUntil());
            if (left.isNegative() || left.isZero()) {
                await(lock.unlockAsync(owner));
                return;
            }
            Releases.EXECUTOR.schedule(this::releaseLater, Math.max(1, left.toMillis()), TimeUnit.MILLISECONDS);
        }

        /** The release at the end of lockAtLeastFor: nobody waits for it, so a failure is logged. */
        private void releaseLater() {
            try {
                lock.unlockAsync(owner).whenComplete((nothing, error) -> {
                    if (error != null) {
                        logFailedRelease(error instanceof CompletionException ? error.getCause() : error);
                    }
                });
            } catch (RuntimeException e) {
                logFailedRelease(e);
            }
        }

        private void logFailedRelease(Throwable error) {
            // A closed client gave its holds back when it closed; anything else is worth a warning.
            if (error instanceof PolylockException && ((PolylockException) error).getCode() == ErrorCode.CONNECTION
                    && error.getMessage() != null && error.getMessage().contains("closed")) {
                LOG.debug("ShedLock lock {} was given back when its client closed", lockConfiguration.getName());
                return;
            }
            LOG.warn("ShedLock lock {}: the release after lockAtLeastFor failed; the lease of lockAtMostFor ends it",
                    lockConfiguration.getName(), error);
        }

        @Override
        public String toString() {
            return "PolylockLockProvider.Hold{" + lockConfiguration + "}";
        }
    }
}
