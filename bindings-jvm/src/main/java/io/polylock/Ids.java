package io.polylock;

import java.util.Objects;
import java.util.UUID;

/**
 * UUIDv7 and ULID, made by polylock's core: no client or backend needed.
 *
 * <p>{@link #uuid7()} follows RFC 9562 (method 1: a 42-bit counter reseeded each millisecond) and
 * {@link #ulid()} the ULID spec with a monotonic random part. Each is greater than every earlier one
 * of this process, from any thread, even when the wall clock steps back; the same vectors are checked
 * in every language polylock ships for.
 */
public final class Ids {
    private Ids() {}

    /** A UUIDv7 ({@code version() == 7}), greater than every earlier one of this process. */
    public static UUID uuid7() {
        long[] bits = NativeBridge.uuid7Next();
        return new UUID(bits[0], bits[1]);
    }

    /** The Unix milliseconds of a UUIDv7; {@link PolylockException} (INVALID_ARGUMENT) for another version. */
    public static long uuid7TimestampMillis(UUID uuid) {
        Objects.requireNonNull(uuid, "uuid");
        return NativeBridge.uuid7TimestampMs(uuid.getMostSignificantBits(), uuid.getLeastSignificantBits());
    }

    /** A ULID (26 characters of Crockford base32), greater than every earlier one of this process. */
    public static String ulid() {
        return NativeBridge.ulidNext();
    }

    /** The Unix milliseconds of a ULID; {@link PolylockException} (INVALID_ARGUMENT) if it is not one. */
    public static long ulidTimestampMillis(String ulid) {
        return ulidToUuid(ulid).getMostSignificantBits() >>> 16;
    }

    /** The same 128 bits as a UUID, to store a ULID in a UUID column. */
    public static UUID ulidToUuid(String ulid) {
        Objects.requireNonNull(ulid, "ulid");
        long[] bits = NativeBridge.ulidParse(ulid);
        return new UUID(bits[0], bits[1]);
    }

    /** The 128 bits of a UUID as a ULID (a UUIDv7 gives the ULID of the same millisecond). */
    public static String uuidToUlid(UUID uuid) {
        Objects.requireNonNull(uuid, "uuid");
        return NativeBridge.ulidFormat(uuid.getMostSignificantBits(), uuid.getLeastSignificantBits());
    }
}
