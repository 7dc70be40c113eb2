package io.polylock;

/**
 * {@link ErrorCode#FENCED}: a fenced write carried a token lower than one the value has already accepted: the lock it
 * came from was taken over (its holder paused past its lease), and the write was refused.
 */
public class FencedException extends PolylockException {
    private static final long serialVersionUID = 1L;

    private final Long winningToken;

    FencedException(String message, Long winningToken) {
        super(ErrorCode.FENCED, message);
        this.winningToken = winningToken;
    }

    /** The highest token the value has accepted (the one that won), or null if it was not reported. */
    public Long getWinningToken() {
        return winningToken;
    }
}
