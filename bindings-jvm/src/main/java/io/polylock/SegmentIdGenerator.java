package io.polylock;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.Objects;

/** The {@link RIdGenerator} of {@link PolylockClient#getIdGenerator(String)}: the core's segment generator. */
final class SegmentIdGenerator implements RIdGenerator {
    private static final Cleaner CLEANER = Cleaner.create();
    /** The core's own options (adaptive step from 1000) until {@link #tryInit} says otherwise. */
    private static final long DEFAULT_STEP = -1;

    private final PolylockClient client;
    private final String name;
    /** The native generator, made on first use (0 until then). */
    private long generator;

    SegmentIdGenerator(PolylockClient client, String name) {
        this.client = Objects.requireNonNull(client, "client");
        this.name = Objects.requireNonNull(name, "name");
    }

    private static native long nativeNew(long client, String name, long step);

    private static native long nativeNextId(long client, long generator);

    private static native long[] nativeNextIds(long client, long generator, int count);

    private static native void nativeFree(long generator);

    @Override
    public String getName() {
        return name;
    }

    @Override
    public synchronized boolean tryInit(long value, long allocationSize) {
        if (value != 0) {
            throw new PolylockException(ErrorCode.UNSUPPORTED, "RIdGenerator.tryInit cannot set a start value ("
                    + value + ") for '" + name + "': polylock's counter only advances by whole ranges and has no"
                    + " set-if-absent on every backend; pass 0, or set max_id in the store before first use");
        }
        if (generator != 0) {
            return false;
        }
        generator = create(allocationSize);
        return true;
    }

    private synchronized long generator() {
        if (generator == 0) {
            generator = create(DEFAULT_STEP);
        }
        return generator;
    }

    private long create(long step) {
        long created = client.withHandle(h -> nativeNew(h, name, step));
        CLEANER.register(this, () -> nativeFree(created));
        return created;
    }

    @Override
    public long nextId() {
        long native_ = generator();
        try {
            return client.withHandle(h -> nativeNextId(h, native_));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public long[] nextIds(int count) {
        long native_ = generator();
        try {
            return client.withHandle(h -> nativeNextIds(h, native_, count));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public String toString() {
        return "RIdGenerator{name=" + name + "}";
    }
}
