package io.polylock;

import java.util.Objects;

/**
 * How one wait of a {@link ValueWatch} ended: the value's next state ({@link Kind#UPDATED} with its new version, or
 * {@link Kind#DELETED}), or no change within the wait ({@link Kind#NO_CHANGE}), or the watch closed ({@link
 * Kind#CLOSED}). Immutable.
 */
public final class ValueChange {
    /** What the wait saw. */
    public enum Kind {
        /** A new version: {@link #getValue()} is the value as written. */
        UPDATED,
        /** The value was deleted. */
        DELETED,
        /** The wait ran out and nothing changed (a change that comes later is the next wait's). */
        NO_CHANGE,
        /** The watch was closed, before or during the wait. */
        CLOSED
    }

    /** What `nativeChanged` completes with besides a Versioned (values.rs's STEP_*). */
    private static final long STEP_DELETED = 0;
    private static final long STEP_NO_CHANGE = 1;
    private static final long STEP_CLOSED = 2;

    private static final ValueChange DELETED = new ValueChange(Kind.DELETED, null);
    private static final ValueChange NO_CHANGE = new ValueChange(Kind.NO_CHANGE, null);
    private static final ValueChange CLOSED = new ValueChange(Kind.CLOSED, null);

    private final Kind kind;
    private final Versioned value;

    private ValueChange(Kind kind, Versioned value) {
        this.kind = kind;
        this.value = value;
    }

    /** The native answer: a Versioned, or a step code. */
    static ValueChange fromNative(Object answer) {
        if (answer instanceof Versioned) {
            return new ValueChange(Kind.UPDATED, (Versioned) answer);
        }
        if (answer instanceof Long) {
            long step = (Long) answer;
            if (step == STEP_DELETED) {
                return DELETED;
            }
            if (step == STEP_NO_CHANGE) {
                return NO_CHANGE;
            }
            if (step == STEP_CLOSED) {
                return CLOSED;
            }
        }
        throw new PolylockException(ErrorCode.INTERNAL, "unexpected answer from a value watch: " + answer);
    }

    public Kind getKind() {
        return kind;
    }

    /** The new state for {@link Kind#UPDATED}; null for every other kind. */
    public Versioned getValue() {
        return value;
    }

    /** Whether the value changed: {@link Kind#UPDATED} or {@link Kind#DELETED}. */
    public boolean isChanged() {
        return kind == Kind.UPDATED || kind == Kind.DELETED;
    }

    @Override
    public boolean equals(Object other) {
        if (!(other instanceof ValueChange)) {
            return false;
        }
        ValueChange that = (ValueChange) other;
        return kind == that.kind && (value == null ? that.value == null
                : that.value != null && value.getVersion() == that.value.getVersion());
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, value == null ? null : value.getVersion());
    }

    @Override
    public String toString() {
        return value == null ? "ValueChange{" + kind + "}" : "ValueChange{" + kind + ", " + value + "}";
    }
}
