package io.polylock;

import java.util.concurrent.TimeUnit;

/**
 * Redisson's RCountDownLatch: a count that one side sets, others count down, and anyone waits to reach zero. On Redis
 * it is Redisson's own layout (the key {@code NAME} holds the count, {@code redisson_countdownlatch__channel__{NAME}}
 * carries its messages), so a Redisson service and a polylock one share a latch; every other backend keeps it in its
 * own store. Nothing is owned and nothing expires: a latch whose counters never count down stays closed, so prefer
 * {@link #await(long, TimeUnit)}. RedLock has no latches ({@link ErrorCode#UNSUPPORTED}).
 */
public interface RCountDownLatch {
    /** Set the count if the latch is open (at zero, or never set); false while it is still counting down. */
    boolean trySetCount(long count);

    /** Take one off the count (never below zero); at zero every waiter, of every client, is released. */
    void countDown();

    /** The count now; 0 when the latch is open. */
    long getCount();

    /** Wait until the count is zero. An interrupt stops the wait and throws InterruptedException. */
    void await() throws InterruptedException;

    /**
     * Wait at most {@code time}: true once the count is zero, false if the time ran out first (the try form, with
     * {@link java.util.concurrent.CountDownLatch#await(long, TimeUnit)}'s meaning).
     */
    boolean await(long time, TimeUnit unit) throws InterruptedException;

    /**
     * The waiting form: wait at most {@code time} (-1: as long as it takes; 0: look once) for the count to reach zero.
     * When the time runs out this throws a {@link PolylockException} with code {@link ErrorCode#TIMEOUT}. A negative
     * time other than -1 is {@link ErrorCode#INVALID_ARGUMENT}. An interrupt stops the wait and throws
     * InterruptedException.
     */
    void awaitZero(long time, TimeUnit unit) throws InterruptedException;

    /** The latch's name. */
    String getName();
}
