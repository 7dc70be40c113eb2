package io.polylock;

import java.time.Duration;

/** {@link ErrorCode#IN_PROGRESS}: another attempt is working on this idempotency key now (HTTP 409 in the IETF draft): retry after {@link #getRetryAfter()}, when it may have finished or may be taken over. */
public class InProgressException extends PolylockException {
    private static final long serialVersionUID = 1L;

    private final Duration retryAfter;

    InProgressException(String message, Duration retryAfter) {
        super(ErrorCode.IN_PROGRESS, message);
        this.retryAfter = retryAfter;
    }

    /** How long to wait before trying again, or null if it was not reported. */
    public Duration getRetryAfter() {
        return retryAfter;
    }
}
