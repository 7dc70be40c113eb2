package io.polylock;

import java.util.concurrent.TimeUnit;

/**
 * Redisson's RPermitExpirableSemaphore: a count of permits, each acquired permit named by an id and held with a lease
 * (renewed by the watchdog while this client lives, or fixed), so a crashed holder's permit comes back. Any thread may
 * release a permit by its id.
 *
 * <p>The {@code *Permit} forms are the same acquisitions returning a {@link Permit}: its id and its fencing token,
 * as {@link RFencedLock#lockAndGetToken()} is {@code lock()} with the lock's token.
 */
public interface RPermitExpirableSemaphore {
    /**
     * Set the number of permits, if this client has not set one yet. The count is fixed in the store by the first use
     * of the name (from any client); asking with another count fails with {@link ErrorCode#INVALID_ARGUMENT}.
     * Returns false if this handle already had a count.
     */
    boolean trySetPermits(int permits);

    /** Take a permit, waiting as long as it takes; held until released (watchdog lease). Returns its id. */
    String acquire() throws InterruptedException;

    /** Take a permit held for at most {@code leaseTime}. Returns its id. */
    String acquire(long leaseTime, TimeUnit unit) throws InterruptedException;

    /** Try once; the permit id, or null if every permit is taken. */
    String tryAcquire();

    /** Wait at most {@code waitTime} for a permit held for {@code leaseTime} (-1: watchdog); its id, or null. */
    String tryAcquire(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    /**
     * The waiting form: wait up to {@code waitTime} (-1: as long as it takes; 0: try once) for a permit held for
     * {@code leaseTime} (-1: watchdog), and return its id. When the wait runs out this throws a {@link
     * PolylockException} with code {@link ErrorCode#TIMEOUT} and no permit is taken; {@link #tryAcquire(long, long,
     * TimeUnit)} is the form that returns null. A negative wait other than -1 is {@link ErrorCode#INVALID_ARGUMENT}.
     */
    String acquireWithin(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    /** {@link #acquire()} returning the permit with its fencing token. */
    Permit acquirePermit() throws InterruptedException;

    /** {@link #acquire(long, TimeUnit)} returning the permit with its fencing token. */
    Permit acquirePermit(long leaseTime, TimeUnit unit) throws InterruptedException;

    /** {@link #tryAcquire()} returning the permit with its fencing token, or null if every permit is taken. */
    Permit tryAcquirePermit();

    /** {@link #tryAcquire(long, long, TimeUnit)} returning the permit with its fencing token, or null. */
    Permit tryAcquirePermit(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    /** {@link #acquireWithin(long, long, TimeUnit)} returning the permit with its fencing token. */
    Permit acquirePermitWithin(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    /** Give back {@code permit}, as {@link #release(String)} with its id. */
    void release(Permit permit);

    /** Give back the permit {@code permitId}; throws {@link IllegalMonitorStateException} if this client does not hold it. */
    void release(String permitId);

    String getName();
}
