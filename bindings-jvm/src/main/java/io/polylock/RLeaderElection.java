package io.polylock;

import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A leader election ({@link PolylockClient#getLeaderElection(String)}). Redisson has none, so the names follow its
 * style and Curator's {@code LeaderLatch} where they meet: candidates {@code campaign} with a value (Curator's
 * participant id), one of them leads at a time, and each new leader's term is a fencing token greater than every
 * earlier leader's. Layouts: etcd's {@code concurrency.Election} (so {@code etcdctl elect} and Go services take
 * part), Curator's {@code LeaderLatch} on ZooKeeper (so a Curator service takes part), and a lease record beside a
 * lock elsewhere (Redis, SQL, SQLite). RedLock has none ({@link ErrorCode#UNSUPPORTED} when the handle is made).
 */
public interface RLeaderElection {
    /** The election's name. */
    String getName();

    /**
     * Campaign with {@code value} until this candidate leads, however long it takes. Each call is a candidate of its
     * own. An interrupt withdraws the candidacy and throws InterruptedException.
     */
    RLeadership campaign(byte[] value) throws InterruptedException;

    /** {@link #campaign(byte[])} with a UTF-8 value. */
    RLeadership campaign(String value) throws InterruptedException;

    /**
     * Campaign for at most {@code time} (-1: as long as it takes; 0: try once; any other negative: {@link
     * ErrorCode#INVALID_ARGUMENT}). When the time runs out this throws a {@link
     * PolylockException} with code {@link ErrorCode#TIMEOUT}, and no candidacy is left behind.
     */
    RLeadership campaign(byte[] value, long time, TimeUnit unit) throws InterruptedException;

    /** {@link #campaign(byte[], long, TimeUnit)} with a UTF-8 value. */
    RLeadership campaign(String value, long time, TimeUnit unit) throws InterruptedException;

    /**
     * The try form of {@link #campaign(byte[], long, TimeUnit)}: campaign for at most {@code time} (-1: as long as
     * it takes; 0: try once) and return the leadership, or null when the time runs out (no candidacy is left
     * behind). A negative time other than -1 is {@link ErrorCode#INVALID_ARGUMENT}. An interrupt withdraws the
     * candidacy and throws InterruptedException.
     */
    RLeadership tryCampaign(byte[] value, long time, TimeUnit unit) throws InterruptedException;

    /** {@link #tryCampaign(byte[], long, TimeUnit)} with a UTF-8 value. */
    RLeadership tryCampaign(String value, long time, TimeUnit unit) throws InterruptedException;

    /** The current leader's value, or empty when nobody leads (Curator's {@code getLeader().getId()}). */
    Optional<byte[]> getLeader();

    /** The current leader with its term, or empty when nobody leads. */
    Optional<Leader> getLeaderInfo();

    /**
     * Call {@code listener} with the leader now and after every change (a new leader, a proclaimed value, nobody
     * leading), on a thread of the subscription's own, until the subscription is closed or the client closes.
     */
    LeaderSubscription observe(LeaderListener listener);

    /** What {@link #observe(LeaderListener)} calls. */
    @FunctionalInterface
    interface LeaderListener {
        /** The leader after a change; empty while nobody leads. */
        void leaderChanged(Optional<Leader> leader);

        /** The store failed the observation, which then ends. By default it is ignored. */
        default void observationFailed(RuntimeException error) {}
    }
}
