package io.polylock;

import java.lang.ref.Cleaner;

/**
 * Snowflake IDs for one worker id, from the core's generator: increasing within a process even if the wall clock
 * steps back a little (it waits out rollbacks up to 10 ms and fails beyond that). IDs use 63 bits, so they are always
 * positive {@code long}s and sort by time. Thread safe.
 */
public final class SnowflakeIdGenerator {
    private static final Cleaner CLEANER = Cleaner.create();

    private final long handle;
    private final long workerId;

    SnowflakeIdGenerator(long workerId, long epochMillis) {
        this.workerId = workerId;
        long created = NativeBridge.snowflakeNew(workerId, epochMillis);
        this.handle = created;
        CLEANER.register(this, () -> NativeBridge.snowflakeFree(created));
    }

    /** The next ID: greater than every ID this generator issued before. */
    public long nextId() {
        try {
            return NativeBridge.snowflakeNext(handle);
        } finally {
            java.lang.ref.Reference.reachabilityFence(this);
        }
    }

    public long getWorkerId() {
        return workerId;
    }

    /** {@code {timestamp (Unix ms), worker, sequence}} of an ID of this generator's layout. */
    public long[] parse(long id) {
        try {
            return NativeBridge.snowflakeParse(handle, id);
        } finally {
            java.lang.ref.Reference.reachabilityFence(this);
        }
    }
}
