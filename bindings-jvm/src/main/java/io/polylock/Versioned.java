package io.polylock;

import java.nio.charset.StandardCharsets;

/** A {@link VersionedValue} as it was read: its bytes, its version, and the highest fencing token it has accepted. */
public final class Versioned {
    private final byte[] value;
    private final long version;
    private final long fencingToken;

    /** Made by the native side; {@code fencingToken} -1 when the value was never written fenced. */
    Versioned(byte[] value, long version, long fencingToken) {
        this.value = value;
        this.version = version;
        this.fencingToken = fencingToken;
    }

    /** The stored bytes (a copy of them is yours to keep). */
    public byte[] getValue() {
        return value.clone();
    }

    /** The value as UTF-8 text. */
    public String getValueAsString() {
        return new String(value, StandardCharsets.UTF_8);
    }

    /** Grows on every write of the name, across a delete and re-create too; compare it for equality only. */
    public long getVersion() {
        return version;
    }

    /** The highest fencing token the value accepted, or null if it was never written fenced (or deleted since). */
    public Long getFencingToken() {
        return fencingToken < 0 ? null : fencingToken;
    }

    @Override
    public String toString() {
        return "Versioned{version=" + version + ", bytes=" + value.length
                + (fencingToken < 0 ? "" : ", fencingToken=" + fencingToken) + "}";
    }
}
