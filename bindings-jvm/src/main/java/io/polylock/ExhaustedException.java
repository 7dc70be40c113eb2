package io.polylock;

import java.time.Duration;

/** {@link ErrorCode#EXHAUSTED}: IDs are used up for now (the next range has not arrived, or the clock has not yet passed a worker id's previous holder): retry after {@link #getRetryAfter()}. */
public class ExhaustedException extends PolylockException {
    private static final long serialVersionUID = 1L;

    private final Duration retryAfter;

    ExhaustedException(String message, Duration retryAfter) {
        super(ErrorCode.EXHAUSTED, message);
        this.retryAfter = retryAfter;
    }

    /** How long to wait before trying again, or null if it was not reported. */
    public Duration getRetryAfter() {
        return retryAfter;
    }
}
