package io.polylock;

/**
 * One permit of an {@link RPermitExpirableSemaphore}, as the {@code *Permit} acquisitions hand it out: its id (what
 * {@link RPermitExpirableSemaphore#release(String)} takes, and what the Redisson-style {@code acquire} methods return)
 * and its fencing token, strictly greater than the token of every earlier grant of the semaphore's name, as a lock's
 * (see {@link RFencedLock}). Pass the token to the storage you protect, as {@link VersionedValue#writeFenced}.
 * Immutable.
 */
public final class Permit {
    private final String id;
    private final long token;

    Permit(String id, long token) {
        this.id = id;
        this.token = token;
    }

    /** The permit's id: hex text, unique within this client. */
    public String getId() {
        return id;
    }

    /** The permit's fencing token. */
    public long getToken() {
        return token;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Permit && ((Permit) other).id.equals(id) && ((Permit) other).token == token;
    }

    @Override
    public int hashCode() {
        return id.hashCode() * 31 + Long.hashCode(token);
    }

    @Override
    public String toString() {
        return "Permit{id=" + id + ", token=" + token + "}";
    }
}
