package io.polylock;

import java.util.concurrent.CompletableFuture;

/**
 * One won campaign of an {@link RLeaderElection}: leading for one term, until {@link #resign()} or a loss (its lease
 * ran out, its session ended, its key was taken). A leadership that is lost or resigned never leads again. Thread
 * safe. {@link #close()} resigns, so try-with-resources leads for one block.
 */
public interface RLeadership extends AutoCloseable {
    /** The election's name. */
    String getName();

    /** The term: a fencing token strictly greater than every earlier leader's term of this election. */
    long getTerm();

    /** The value campaigned with or last proclaimed (a copy). */
    byte[] getValue();

    /** True until resigned or lost (Curator's {@code hasLeadership()}); once false, never true again. */
    boolean isLeader();

    /** Whether the store no longer has this leader. */
    boolean isLost();

    /** While the connection is down and the backend cannot tell whether this is still the leader (ZooKeeper). */
    boolean isSuspended();

    /** Why it was lost, or null. */
    String getLostReason();

    /**
     * Completes with the reason when this leadership is lost (the client closing counts). It never completes for a
     * leadership resigned before it was lost.
     */
    CompletableFuture<String> onLost();

    /**
     * Replace the leader's value, without a new term. A {@link PolylockException} ({@link ErrorCode#LOST}) if it is no
     * longer the leader; an {@link IllegalMonitorStateException} once resigned.
     */
    void proclaim(byte[] value);

    /** {@link #proclaim(byte[])} with a UTF-8 value. */
    void proclaim(String value);

    /**
     * Stop leading, so the next candidate leads. Twice is harmless; a {@link PolylockException} ({@link
     * ErrorCode#LOST}) if it had been lost before.
     */
    void resign();

    /** {@link #resign()}, quiet about a loss (which {@link #onLost()} and {@link #isLost()} already tell). */
    @Override
    void close();
}
