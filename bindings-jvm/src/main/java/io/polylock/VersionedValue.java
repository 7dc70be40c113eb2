package io.polylock;

import java.util.Objects;

/**
 * A named value written by compare-and-set on a version that only grows (optimistic locking, JPA's {@code @Version}),
 * or written fenced: only with a fencing token at least as high as every token it has accepted, which is what makes a
 * lock's fencing tokens mean something. Every call is one round trip on the caller's thread. Backends without
 * versioned values throw {@link ErrorCode#UNSUPPORTED}.
 *
 * <pre>{@code
 * RFencedLock lock = client.getFencedLock("orders:42");
 * Long token = lock.lockAndGetToken();
 * try {
 *     client.getVersionedValue("orders:42:state").writeFenced(token, bytes); // FencedException if taken over
 * } finally {
 *     lock.unlock();
 * }
 * }</pre>
 */
public final class VersionedValue {
    private final PolylockClient client;
    private final String name;

    VersionedValue(PolylockClient client, String name) {
        this.client = client;
        this.name = Objects.requireNonNull(name, "name");
    }

    private static native Versioned nativeGet(long client, String name);

    private static native long nativeCreate(long client, String name, byte[] value);

    private static native long nativeCompareAndSet(long client, String name, long version, byte[] value);

    private static native void nativeDelete(long client, String name, long version);

    private static native long nativeWriteFenced(long client, String name, long token, byte[] value);

    public String getName() {
        return name;
    }

    /** The value with its version, or null if there is none. */
    public Versioned get() {
        return client.withHandle(h -> nativeGet(h, name));
    }

    /** Create the value; its first version. {@link ConflictException} (with the current value) if it exists. */
    public long create(byte[] value) {
        return client.withHandle(h -> nativeCreate(h, name, value));
    }

    /**
     * Replace the value if it is still at {@code version}; the new version. {@link ConflictException}, carrying the
     * current value and version, if someone else wrote first or it is gone.
     */
    public long compareAndSet(long version, byte[] value) {
        return client.withHandle(h -> nativeCompareAndSet(h, name, version, value));
    }

    /** Remove the value if it is still at {@code version}; {@link ConflictException} if it is not (or is gone). */
    public void delete(long version) {
        client.withHandle(h -> {
            nativeDelete(h, name, version);
            return null;
        });
    }

    /**
     * Write {@code value} if {@code token} is at least the highest fencing token this value has accepted (a value
     * never written fenced accepts any); the new version. {@link FencedException}, carrying the winning token, if a
     * higher token has written: the caller's lock was taken over, and the write must not happen.
     */
    public long writeFenced(long token, byte[] value) {
        return client.withHandle(h -> nativeWriteFenced(h, name, token, value));
    }

    /**
     * Follow this value's changes from now on (one round trip: the store's change feed is set up and the value read,
     * which {@link ValueWatch#current()} then returns). Close the watch when done; see {@link ValueWatch}. Backends
     * without versioned values throw {@link ErrorCode#UNSUPPORTED}.
     */
    public ValueWatch watch() {
        return new ValueWatch(client, name);
    }

    @Override
    public String toString() {
        return "VersionedValue{name=" + name + "}";
    }
}
