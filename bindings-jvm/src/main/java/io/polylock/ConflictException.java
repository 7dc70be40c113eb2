package io.polylock;

/**
 * {@link ErrorCode#CONFLICT}: a compare-and-set found another version than expected, a value to create exists, or a
 * value to delete moved on. Carries the value as it is now, so the caller can retry from it without another read.
 */
public class ConflictException extends PolylockException {
    private static final long serialVersionUID = 1L;

    private final byte[] currentValue;
    private final Long currentVersion;

    ConflictException(String message, byte[] currentValue, Long currentVersion) {
        super(ErrorCode.CONFLICT, message);
        this.currentValue = currentValue;
        this.currentVersion = currentVersion;
    }

    /** The value as it is now, or null when there is none (or it was not reported). */
    public byte[] getCurrentValue() {
        return currentValue == null ? null : currentValue.clone();
    }

    /** The current version, or null when there is no value (or it was not reported). */
    public Long getCurrentVersion() {
        return currentVersion;
    }
}
