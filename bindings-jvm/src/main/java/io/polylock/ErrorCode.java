package io.polylock;

/** What went wrong in polylock, mirroring the core's {@code ErrorKind}. */
public enum ErrorCode {
    /** The caller passed something unusable: an empty name, a zero lease, an unknown URL scheme. */
    INVALID_ARGUMENT(1),
    /** A wait for a lock ended before the lock was free. */
    TIMEOUT(2),
    /** A release by a thread that does not hold the lock (thrown as {@link IllegalMonitorStateException}). */
    NOT_OWNER(3),
    /** The lock was held, but the backend no longer holds it (lease expired, forced unlock, session died). */
    LOST(4),
    /** The backend could not be reached, refused the credentials, or the client is closed. */
    CONNECTION(5),
    /** The backend answered with something unexpected, or an internal error occurred. */
    BACKEND(6);

    private final int nativeCode;

    ErrorCode(int nativeCode) {
        this.nativeCode = nativeCode;
    }

    static ErrorCode fromNative(int code) {
        for (ErrorCode value : values()) {
            if (value.nativeCode == code) {
                return value;
            }
        }
        return BACKEND;
    }
}
