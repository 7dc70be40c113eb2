package io.polylock;

/**
 * A polylock failure other than a release by a non-owner (which is an
 * {@link IllegalMonitorStateException}, as in the JDK and Redisson). {@link #getCode()} says what
 * kind of failure it is; the message says what to do about it and never contains credentials.
 */
public class PolylockException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;

    public PolylockException(ErrorCode code, String message) {
        super(message);
        this.code = code;
    }

    public ErrorCode getCode() {
        return code;
    }

    @Override
    public String toString() {
        return getClass().getName() + " [" + code + "]: " + getMessage();
    }
}
