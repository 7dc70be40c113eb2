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

    /** A first-come-first-served lock (Redisson's fair lock on Redis), with its fencing tokens. */
    public RFencedLock getFairLock(String name) {
        return newLock(name, NativeBridge.KIND_FAIR);
    }

    /** A reentrant lock whose acquisitions return fencing tokens (Redisson's RFencedLock on Redis). */
    public RFencedLock getFencedLock(String name) {
        return newLock(name, NativeBridge.KIND_REENTRANT);
    }

    /**
     * The plain token lock of redis-py and node-redlock ({@code SET NX PX}), with its fencing tokens; not reentrant in
     * the store.
     */
    public RFencedLock getTokenLock(String name) {
        return newLock(name, NativeBridge.KIND_TOKEN);
    }

    /**
     * ShedLock's lease lock on SQL databases (its {@code shedlock} table): a row with a lease, with its fencing tokens;
     * not reentrant in the store.
     */
    public RFencedLock getLeaseLock(String name) {
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
     * Redisson's {@code getCountDownLatch}: the countdown latch {@code name}. On Redis it shares Redisson's
     * RCountDownLatch layout, so Redisson services see the same count. {@link ErrorCode#UNSUPPORTED} on RedLock.
     */
    public RCountDownLatch getCountDownLatch(String name) {
        Objects.requireNonNull(name, "name");
        return new NativeCountDownLatch(this, name);
    }

    /**
     * The leader election {@code name} (Redisson has none; see {@link RLeaderElection} for its names and layouts):
     * campaign with a value, lead for a term whose number is a fencing token, read and observe the leader. On etcd it
     * is etcd's own {@code concurrency.Election}, on ZooKeeper Curator's {@code LeaderLatch}. {@link
     * ErrorCode#UNSUPPORTED} on RedLock.
     */
    public RLeaderElection getLeaderElection(String name) {
        Objects.requireNonNull(name, "name");
        return new NativeLeaderElection(this, name);
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

    /**
     * Redisson's {@code RIdGenerator}: Leaf-style segment IDs of {@code name} (the {@code leaf_alloc} row's {@code
     * biz_tag} on SQL and SQLite, a counter elsewhere), unique across every process on this backend. Backends without
     * counters throw {@link ErrorCode#UNSUPPORTED} on first use. See {@link RIdGenerator#tryInit} for what it can and
     * cannot honour.
     */
    public RIdGenerator getIdGenerator(String name) {
        return new SegmentIdGenerator(this, name);
    }

    /**
     * A Snowflake generator (Twitter layout) on the lowest free worker id, leased from this backend: no other
     * generator sharing it issues the same IDs, whatever the clocks say. Waits for the lease (throws {@link
     * ExhaustedException} when every id is taken).
     */
    public LeasedSnowflakeIdGenerator leaseSnowflake() {
        return new LeasedSnowflakeIdGenerator(this, -1, -1);
    }

    /** As {@link #leaseSnowflake()}, on {@code workerId} only ({@link ErrorCode#TIMEOUT} if another generator holds it). */
    public LeasedSnowflakeIdGenerator leaseSnowflake(long workerId) {
        if (workerId < 0) {
            throw new PolylockException(ErrorCode.INVALID_ARGUMENT, "workerId must not be negative, got " + workerId);
        }
        return new LeasedSnowflakeIdGenerator(this, workerId, -1);
    }

    /** A versioned value: compare-and-set on a version that only grows, and fenced writes. Holds nothing. */
    public VersionedValue getVersionedValue(String name) {
        return new VersionedValue(this, name);
    }

    /** Idempotency keys of {@code namespace}: responses kept 24 h, an attempt taken over after 60 s without extend. */
    public Idempotency getIdempotency(String namespace) {
        return new Idempotency(this, namespace, null, null);
    }

    /** Idempotency keys of {@code namespace} with their own retention and in-progress TTL. */
    public Idempotency getIdempotency(String namespace, java.time.Duration retention, java.time.Duration inProgressTtl) {
        java.util.Objects.requireNonNull(retention, "retention");
        java.util.Objects.requireNonNull(inProgressTtl, "inProgressTtl");
        return new Idempotency(this, namespace, retention, inProgressTtl);
    }

    /**
     * Redisson's {@code getMultiLock}: the locks (locks or read/write sides of this client) held as one, taken in one
     * canonical order under one wait, so two multi-locks over the same locks never deadlock. See {@link MultiLock}.
     */
    public MultiLock getMultiLock(RLock... locks) {
        Objects.requireNonNull(locks, "locks");
        String[] names = new String[locks.length];
        int[] kinds = new int[locks.length];
        for (int i = 0; i < locks.length; i++) {
            RLock lock = locks[i];
            if (!(lock instanceof NativeLock) || ((NativeLock) lock).client() != this) {
                throw new PolylockException(ErrorCode.INVALID_ARGUMENT,
                        "a multi-lock takes locks of the client that makes it; " + locks[i] + " is not one");
            }
            names[i] = lock.getName();
            kinds[i] = ((NativeLock) lock).kind();
        }
        return new MultiLock(this, names, kinds);
    }

    /**
     * The status of the lock {@code name} of the backend's default kind (the kind {@link #getLock(String)} makes on
     * most backends): held or not, its holder, fencing token and lease, as the backend's layout tells. The fields of
     * {@code polylock status --json}.
     */
    public LockStatus status(String name) {
        return status(name, null);
    }

    /**
     * As {@link #status(String)} for the lock of {@code kind} ({@code "reentrant"}, {@code "fair"}, {@code "token"},
     * {@code "lease"}; null: the backend's default). A kind the backend lacks is {@link ErrorCode#UNSUPPORTED}.
     */
    public LockStatus status(String name, String kind) {
        Objects.requireNonNull(name, "name");
        return new LockStatus(withHandle(h -> nativeStatusJson(h, name, kind)));
    }

    /**
     * The locks whose name starts with {@code prefix}, sorted by name (the entries of {@code polylock list --json}).
     * Backends that cannot enumerate their locks throw {@link ErrorCode#UNSUPPORTED}.
     */
    public java.util.List<LockEntry> list(String prefix) {
        Objects.requireNonNull(prefix, "prefix");
        java.util.List<LockEntry> entries = new java.util.ArrayList<>();
        Object parsed = Json.parse(withHandle(h -> nativeListJson(h, prefix)));
        if (!(parsed instanceof java.util.List)) {
            throw new PolylockException(ErrorCode.INTERNAL, "expected a JSON list from the native library");
        }
        for (Object entry : (java.util.List<?>) parsed) {
            entries.add(new LockEntry(LockStatus.object(entry)));
        }
        return java.util.Collections.unmodifiableList(entries);
    }

    /**
     * Remove the lock {@code name} of the backend's default kind whoever holds it, and wake its waiters (Redisson's
     * {@code forceUnlock}); whether it was held. Dangerous: the holder learns of it only at its next renewal or
     * unlock ({@link ErrorCode#LOST}).
     */
    public boolean forceUnlock(String name) {
        return forceUnlock(name, null);
    }

    /** As {@link #forceUnlock(String)} for the lock of {@code kind} (as in {@link #status(String, String)}). */
    public boolean forceUnlock(String name, String kind) {
        Objects.requireNonNull(name, "name");
        return withHandle(h -> nativeForceUnlock(h, name, kind));
    }

    private static native String nativeStatusJson(long client, String name, String kind);

    private static native String nativeListJson(long client, String prefix);

    private static native boolean nativeForceUnlock(long client, String name, String kind);

    /** This client's own metrics (see {@link Metrics}); {@link Polylock#metrics()} sums every client's. */
    public Metrics getMetrics() {
        return new Metrics(withHandle(NativeBridge::clientMetricsJson));
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
