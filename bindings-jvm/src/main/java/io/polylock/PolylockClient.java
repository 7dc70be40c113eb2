package io.polylock;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.LongFunction;

/**
 * A connection to one backend, with its own native runtime (worker threads attached to the JVM as daemons). Thread
 * safe; share one per process and backend, as with a {@code RedissonClient}. {@link #close()} stops the watchdogs,
 * gives back every lock this client holds and frees the native side; calls after it throw a {@link
 * PolylockException} with code {@link ErrorCode#CONNECTION}.
 *
 * <p>An owner is this client's id and a Java thread id, so the Redis hash field is exactly Redisson's
 * {@code <uuid>:<threadId>}.
 */
public final class PolylockClient implements AutoCloseable {
    /** Native calls hold the read side; close takes the write side, so no call ever sees a freed handle. */
    private final ReentrantReadWriteLock handleGuard = new ReentrantReadWriteLock();

    private long handle;
    private final String id;

    PolylockClient(String url) {
        this.handle = NativeBridge.connect(url);
        this.id = NativeBridge.clientId(handle);
    }

    /** A reentrant lock (Redisson's RLock on Redis). Holds nothing until acquired. */
    public RLock getLock(String name) {
        return newLock(name, NativeBridge.KIND_REENTRANT);
    }

    /** A first-come-first-served lock (Redisson's fair lock on Redis). */
    public RLock getFairLock(String name) {
        return newLock(name, NativeBridge.KIND_FAIR);
    }

    /** A reentrant lock whose acquisitions return fencing tokens (Redisson's RFencedLock on Redis). */
    public RFencedLock getFencedLock(String name) {
        return newLock(name, NativeBridge.KIND_REENTRANT);
    }

    /** The plain token lock of redis-py and node-redlock ({@code SET NX PX}); not reentrant in the store. */
    public RLock getTokenLock(String name) {
        return newLock(name, NativeBridge.KIND_TOKEN);
    }

    /** ShedLock's lease lock on SQL databases (its {@code shedlock} table): a row with a lease, not reentrant in the store. */
    public RLock getLeaseLock(String name) {
        return newLock(name, NativeBridge.KIND_LEASE);
    }

    /**
     * A read-write lock (Redisson's RReadWriteLock): {@code readLock()} is shared, {@code writeLock()} exclusive, each
     * owned by the calling thread and reentrant. The writer may also read (a downgrade); a reader asking for the write
     * lock gets a {@link PolylockException} ({@link ErrorCode#INVALID_ARGUMENT}) at once. Backends without read-write
     * locks throw {@link ErrorCode#UNSUPPORTED} here.
     */
    public RReadWriteLock getReadWriteLock(String name) {
        return new ReadWriteLock(newLock(name, NativeBridge.KIND_READ), newLock(name, NativeBridge.KIND_WRITE));
    }

    /**
     * A semaphore of owned, expiring permits (Redisson's RPermitExpirableSemaphore): set its count with {@link
     * RPermitExpirableSemaphore#trySetPermits(int)}, then acquire permits by id. Backends without semaphores throw
     * {@link ErrorCode#UNSUPPORTED} when a permit is first asked for.
     */
    public RPermitExpirableSemaphore getPermitExpirableSemaphore(String name) {
        Objects.requireNonNull(name, "name");
        return new PermitExpirableSemaphore(this, name);
    }

    /**
     * A plain semaphore (Redisson's RSemaphore layout, Redis only): an unowned counter of permits, shared with
     * Redisson's RSemaphore on the same name. Its permits have no owner and no lease, so a holder that crashes leaks
     * them for good; prefer {@link #getPermitExpirableSemaphore(String)}. Other backends throw {@link
     * ErrorCode#UNSUPPORTED} here.
     */
    public RSemaphore getSemaphore(String name) {
        Objects.requireNonNull(name, "name");
        return new PlainSemaphore(this, name);
    }

    /**
     * A Snowflake ID generator for {@code workerId} (Twitter layout: 41 bits of milliseconds, 10 of worker, 12 of
     * sequence). IDs are positive {@code long}s.
     */
    public SnowflakeIdGenerator getIdGenerator(long workerId) {
        return new SnowflakeIdGenerator(workerId, -1);
    }

    /** As {@link #getIdGenerator(long)}, counting milliseconds from {@code epochMillis} (Unix ms) instead of Twitter's epoch. */
    public SnowflakeIdGenerator getIdGenerator(long workerId, long epochMillis) {
        if (epochMillis < 0) {
            throw new PolylockException(ErrorCode.INVALID_ARGUMENT, "epochMillis must not be negative, got " + epochMillis);
        }
        return new SnowflakeIdGenerator(workerId, epochMillis);
    }

    /** This client's random id: the first half of every lock field it writes. */
    public String getId() {
        return id;
    }

    public boolean isShutdown() {
        handleGuard.readLock().lock();
        try {
            return handle == 0;
        } finally {
            handleGuard.readLock().unlock();
        }
    }

    /** Redisson's name for {@link #close()}. */
    public void shutdown() {
        close();
    }

    @Override
    public void close() {
        long closing;
        handleGuard.writeLock().lock();
        try {
            closing = handle;
            handle = 0;
        } finally {
            handleGuard.writeLock().unlock();
        }
        // Outside the guard: pending calls complete (exceptionally) while close runs.
        NativeBridge.close(closing);
    }

    private NativeLock newLock(String name, int kind) {
        Objects.requireNonNull(name, "name");
        withHandle(client -> {
            NativeBridge.checkLock(client, name, kind);
            return null;
        });
        return new NativeLock(this, name, kind);
    }

    /** For the tests: make the native side panic, directly ({@code inTask} false) or in a runtime task. */
    CompletableFuture<Long> selfTestPanic(boolean inTask) {
        CompletableFuture<Long> future = inTask ? new CompletableFuture<>() : null;
        withHandle(h -> {
            NativeBridge.selfTestPanic(h, future);
            return null;
        });
        return future;
    }

    /** Run a native call on the live handle (0 once closed, which the native side reports as closed). */
    <T> T withHandle(LongFunction<T> call) {
        handleGuard.readLock().lock();
        try {
            return call.apply(handle);
        } finally {
            handleGuard.readLock().unlock();
        }
    }
}
