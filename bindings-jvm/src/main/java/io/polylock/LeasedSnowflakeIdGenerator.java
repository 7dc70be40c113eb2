package io.polylock;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;

/**
 * Snowflake IDs on a worker id leased from the backend ({@link PolylockClient#leaseSnowflake()}), so no two generators
 * sharing the backend (and namespace) ever issue the same ID, whatever their clocks say:
 *
 * <ul>
 *   <li>the worker id is held as a lock, renewed by the watchdog, with an epoch that grows on every take;
 *   <li>every renewal writes a high-water mark beside it, and a new holder of the id never issues a timestamp at or
 *       below the mark it found (clock rollback, a restart, a second machine whose clock is behind);
 *   <li>the generator stops issuing at its lease deadline on the local monotonic clock, whether or not it heard from
 *       the store. A lost lease fails the next call with {@link ErrorCode#LOST} (and {@link #getWorkerId()} is null
 *       from then on); the call after it leases another free id, unless one worker id was asked for.
 * </ul>
 *
 * <p>Thread safe. {@link #close()} gives the worker id back; a generator dropped without closing keeps it until its
 * lease ends.
 */
public final class LeasedSnowflakeIdGenerator implements AutoCloseable {
    private static final Cleaner CLEANER = Cleaner.create();
    private static final int LEASE_WORKER = 0;
    private static final int LEASE_EPOCH = 1;

    private final PolylockClient client;
    private final long generator;

    LeasedSnowflakeIdGenerator(PolylockClient client, long workerId, long epochMillis) {
        this.client = client;
        long created = client.withHandle(h -> nativeStart(h, workerId, epochMillis));
        this.generator = created;
        CLEANER.register(this, () -> nativeFree(created));
    }

    private static native long nativeStart(long client, long workerId, long epochMillis);

    private static native long nativeNextId(long client, long generator);

    private static native long[] nativeNextIds(long client, long generator, int count);

    private static native long nativeLease(long client, long generator, int which);

    private static native long[] nativeParse(long generator, long id);

    private static native void nativeClose(long client, long generator);

    private static native void nativeFree(long generator);

    /** The next ID (a positive {@code long}). Throws {@link PolylockException} LOST if the lease ended under it. */
    public long nextId() {
        try {
            return client.withHandle(h -> nativeNextId(h, generator));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** {@code count} IDs in increasing order, all under one lease. */
    public long[] nextIds(int count) {
        try {
            return client.withHandle(h -> nativeNextIds(h, generator, count));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** The worker id held now, or null after a loss was reported (until the next call leases one) or after close. */
    public Long getWorkerId() {
        return lease(LEASE_WORKER);
    }

    /** The epoch of the lease held now: greater than that of every earlier take of the same worker id. */
    public Long getEpoch() {
        return lease(LEASE_EPOCH);
    }

    private Long lease(int which) {
        try {
            long value = client.withHandle(h -> nativeLease(h, generator, which));
            return value < 0 ? null : value;
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** {@code {timestamp (Unix ms), worker, sequence}} of an ID of this generator's layout. */
    public long[] parse(long id) {
        try {
            return nativeParse(generator, id);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Stop renewing and give the worker id back (the next holder need not wait for the rest of the lease). */
    @Override
    public void close() {
        try {
            client.withHandle(h -> {
                nativeClose(h, generator);
                return null;
            });
        } finally {
            Reference.reachabilityFence(this);
        }
    }
}
