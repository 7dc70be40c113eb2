package io.polylock;

/**
 * What went wrong in polylock: the core's one table of error kinds, with the same numbers as the C status codes
 * (ErrorCodeTest checks this enum against the native table).
 */
public enum ErrorCode {
    /** A wait for a lock ended before the lock was free. */
    TIMEOUT(1),
    /** A release by a thread that does not hold the lock (thrown as {@link IllegalMonitorStateException}). */
    NOT_OWNER(2),
    /** The lock was held, but the backend no longer holds it (lease expired, forced unlock, session died). */
    LOST(3),
    /** The backend could not be reached, refused the credentials, or the client is closed. */
    CONNECTION(4),
    /** The caller passed something unusable: an empty name, a zero lease, an unknown URL scheme. */
    INVALID_ARGUMENT(5),
    /** The backend answered with something unexpected. */
    BACKEND(6),
    /** A bug inside polylock, caught at the language boundary; the message says where. */
    INTERNAL(7),
    /** The backend does not offer this kind of lock or primitive; thrown when the handle is made. */
    UNSUPPORTED(8),
    /** The caller gave up on the call; nothing is left held. */
    CANCELLED(9),
    /** A compare-and-set found another version than expected, or a value to create already exists. */
    CONFLICT(10),
    /** A fenced write carried a token lower than one the value has already accepted. */
    FENCED(11),
    /** IDs are used up until the next range or worker lease renewal; retrying later can succeed. */
    EXHAUSTED(12),
    /** Another attempt is working on this idempotency key now; retry later. */
    IN_PROGRESS(13),
    /** The idempotency key was used before with another payload. */
    MISMATCH(14);

    private final int nativeCode;

    ErrorCode(int nativeCode) {
        this.nativeCode = nativeCode;
    }

    /** The kind's number in the core's table (the C status of the same name). */
    public int code() {
        return nativeCode;
    }

    static ErrorCode fromNative(int code) {
        for (ErrorCode value : values()) {
            if (value.nativeCode == code) {
                return value;
            }
        }
        return INTERNAL;
    }
}
