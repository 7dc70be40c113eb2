package io.polylock;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;

/**
 * A named distributed lock with Redisson's {@code RLock} API. Reentrant per owner, where the owner is this client
 * and a thread id: by default the calling thread, or an explicit {@code threadId} in the async overloads (for
 * virtual threads and reactive code). Only the owner may unlock; anyone else gets an
 * {@link IllegalMonitorStateException}.
 *
 * <p>Lease times: {@code -1} (or the methods without one) lets the watchdog keep the lock while this client lives,
 * renewing the client's watchdog lease (30 s by default) every third of it; a positive lease holds the lock at most
 * that long. Wait times: {@code -1} waits as long as it takes (Redisson's meaning); {@code 0} tries once; any other negative
 * wait is {@link ErrorCode#INVALID_ARGUMENT} (docs/conventions.md), also in {@link #tryLock(long, TimeUnit)}.
 *
 * <p>The futures of the async methods are completed on polylock's own worker threads: chain blocking work with the
 * {@code *Async(..., executor)} stages rather than running it in those threads. Cancelling a pending
 * {@code lockAsync}/{@code tryLockAsync} future stops its wait and leaves nothing held.
 *
 * <p>A hold that ends without its owner's unlock (its lease ran out, the store lost it, a forced unlock, the client
 * closed) is <em>lost</em>: {@link #isLost()} and {@link #getLostReason()} tell it, {@link #onLost()} completes with
 * the reason when it happens, and {@code unlock()} of a lost hold throws a {@link PolylockException} with {@link
 * ErrorCode#LOST} (the hold is given up all the same).
 *
 * <pre>{@code
 * lock.lock(30, TimeUnit.SECONDS);
 * CompletableFuture<String> lost = lock.onLost();
 * lost.thenAccept(reason -> work.cancel(true)); // stop writing once the lock is gone
 * try {
 *     work.run();
 * } finally {
 *     lock.unlock();                            // LOST if the lease ran out first
 * }
 * }</pre>
 */
public interface RLock extends Lock {
    /** The lock's name, as given to {@code getLock}. */
    String getName();

    /** Wait as long as it takes (ignoring interrupts), then hold for {@code leaseTime}, or under the watchdog if -1. */
    void lock(long leaseTime, TimeUnit unit);

    /** As {@link #lock(long, TimeUnit)}, but an interrupt stops the wait with {@link InterruptedException}. */
    void lockInterruptibly(long leaseTime, TimeUnit unit) throws InterruptedException;

    /** Wait up to {@code waitTime} (-1: forever), then hold for {@code leaseTime} (-1: watchdog). */
    boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    /**
     * The waiting form: wait up to {@code waitTime} (-1: as long as it takes; 0: try once), then hold for {@code
     * leaseTime} (-1: watchdog). When the wait runs out this throws a {@link PolylockException} with code {@link
     * ErrorCode#TIMEOUT} and nothing is held; {@link #tryLock(long, long, TimeUnit)} is the form that returns false.
     * A negative wait other than -1 is {@link ErrorCode#INVALID_ARGUMENT}. An interrupt stops the wait (nothing stays
     * held) and throws InterruptedException.
     */
    void lockWithin(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    /** Remove the lock whoever holds it and wake its waiters. Returns whether it was held. */
    boolean forceUnlock();

    /** Whether anyone (any client, any language) holds the lock now. */
    boolean isLocked();

    /** Whether the calling thread holds the lock through this client. */
    boolean isHeldByCurrentThread();

    /** Whether the thread {@code threadId} holds the lock through this client. */
    boolean isHeldByThread(long threadId);

    /** How many times the calling thread holds the lock (0 if not at all). */
    int getHoldCount();

    /**
     * Whether the calling thread's current hold was lost (see the class comment): false while it holds the lock, and
     * when it holds nothing (never took it, or gave it back). A lost hold stays lost until the thread unlocks it.
     */
    boolean isLost();

    /** Why the calling thread's current hold was lost, or null (as {@link #isLost()} is false). */
    String getLostReason();

    /**
     * The calling thread's current hold's loss: completes with the reason when the hold is lost (at once if it is lost
     * already), as {@link RLeadership#onLost()} does. It never completes for a hold given back first, and then costs
     * nothing: the wait behind it ends with the hold. Cancelling the future ends that wait too. Throws {@link
     * IllegalMonitorStateException} if the thread holds nothing. Completed on polylock's worker threads.
     */
    CompletableFuture<String> onLost();

    /** {@link #onLost()} for the hold of the owner {@code threadId} (as in {@link #lockAsync(long)}). */
    CompletableFuture<String> onLost(long threadId);

    /** The holder's remaining lease in milliseconds: -2 if the lock is free, -1 if it is held without expiry. */
    long remainTimeToLive();

    CompletableFuture<Void> lockAsync();

    CompletableFuture<Void> lockAsync(long threadId);

    CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit);

    CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit, long threadId);

    CompletableFuture<Boolean> tryLockAsync();

    CompletableFuture<Boolean> tryLockAsync(long threadId);

    CompletableFuture<Boolean> tryLockAsync(long waitTime, TimeUnit unit);

    CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit);

    CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit, long threadId);

    /** Release one hold of the calling thread. Fails with {@link IllegalMonitorStateException} for a non-owner. */
    CompletableFuture<Void> unlockAsync();

    CompletableFuture<Void> unlockAsync(long threadId);

    CompletableFuture<Boolean> forceUnlockAsync();

    CompletableFuture<Boolean> isLockedAsync();

    CompletableFuture<Long> remainTimeToLiveAsync();
}
