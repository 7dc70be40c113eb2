package io.polylock;

import java.util.concurrent.TimeUnit;

/**
 * Redisson's RSemaphore: a plain counter of permits, shared with Redisson's RSemaphore (and RPermitExpirableSemaphore)
 * on the same name. Redis only; other backends throw {@link ErrorCode#UNSUPPORTED} from
 * {@link PolylockClient#getSemaphore(String)}.
 *
 * <p><b>Permits are not owned and have no lease.</b> A process that crashes (or forgets) before releasing its permits
 * leaks them for good: the count stays lower until someone calls {@link #release(int)} or {@link #addPermits(int)}.
 * Any thread of any client may release any number of permits, taken or not. Use
 * {@link PolylockClient#getPermitExpirableSemaphore(String)} (owned permits whose lease returns them) unless Redisson's
 * RSemaphore users must see the same permits.
 */
public interface RSemaphore {
    /** Set the number of available permits if the semaphore has none yet; false if it had a count. */
    boolean trySetPermits(int permits);

    /** Take one permit, waiting as long as it takes. */
    void acquire() throws InterruptedException;

    /** Take {@code permits} at once, waiting as long as it takes. */
    void acquire(int permits) throws InterruptedException;

    /** Take one permit if one is available now. */
    boolean tryAcquire();

    /** Take {@code permits} if that many are available now. */
    boolean tryAcquire(int permits);

    /** Take one permit, waiting at most {@code waitTime}; false if none came free. */
    boolean tryAcquire(long waitTime, TimeUnit unit) throws InterruptedException;

    /** Take {@code permits} at once, waiting at most {@code waitTime}; false if they did not come free. */
    boolean tryAcquire(int permits, long waitTime, TimeUnit unit) throws InterruptedException;

    /** Give one permit back (whoever took it) and wake the waiters. */
    void release();

    /** Give {@code permits} back (whoever took them) and wake the waiters. */
    void release(int permits);

    /** The number of permits available now (0 for a semaphore without a count). */
    int availablePermits();

    /** Take every available permit; how many that was. */
    int drainPermits();

    /** Change the number of available permits by {@code permits}, which may be negative. */
    void addPermits(int permits);

    String getName();
}
