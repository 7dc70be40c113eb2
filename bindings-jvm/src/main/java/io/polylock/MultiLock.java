package io.polylock;

import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * Several locks of one client held as one ({@link PolylockClient#getMultiLock(RLock...)}, Redisson's {@code
 * RedissonMultiLock}), without its deadlock: the parts are always taken in one canonical order (the byte order of
 * their storage keys), so two multi-locks over the same locks, listed in any order, queue behind each other instead of
 * each holding what the other waits for (Redisson issues #1160, #4050). One wait covers the whole multi-lock, not each
 * part, and when it fails every part already taken is given back before the call returns. Each part keeps its
 * ordinary layout (a Redisson client holding one of them excludes the multi-lock) and its own fencing token.
 *
 * <p>Owned by the calling thread (or an explicit thread id in the async methods), reentrant per part, released by
 * {@link #unlock()} from the owner. Lease and wait times follow {@link RLock}: -1 lease is the watchdog, -1 wait is
 * forever.
 */
public final class MultiLock implements Lock {
    private static final long FOREVER = -1;
    private static final long WATCHDOG = -1;

    private final PolylockClient client;
    private final String[] names;
    private final int[] kinds;

    MultiLock(PolylockClient client, String[] names, int[] kinds) {
        this.client = client;
        this.names = names;
        this.kinds = kinds;
        client.withHandle(h -> {
            nativeCheck(h, names, kinds);
            return null;
        });
    }

    private static native void nativeCheck(long client, String[] names, int[] kinds);

    private static native long nativeAcquire(
            long client, String[] names, int[] kinds, long threadId, long waitMs, long leaseMs, CompletableFuture<Long> future);

    private static native void nativeRelease(long client, String[] names, int[] kinds, long threadId, CompletableFuture<Long> future);

    private static native boolean nativeIsHeld(long client, String[] names, int[] kinds, long threadId);

    private static native long[] nativeTokens(long client, String[] names, int[] kinds, long threadId);

    /** The parts' names, as listed (they are taken in canonical order whatever the listing). */
    public String[] getNames() {
        return names.clone();
    }

    // ---- native calls

    /** Completes with the number of parts, or null when the wait ran out (nothing held). */
    private CompletableFuture<Long> acquire(long threadId, long waitMs, long leaseMs) {
        CompletableFuture<Long> future = new CompletableFuture<>();
        long call = client.withHandle(h -> nativeAcquire(h, names, kinds, threadId, waitMs, leaseMs, future));
        future.whenComplete((taken, error) -> {
            if (future.isCancelled()) {
                NativeBridge.cancel(call);
            }
            NativeBridge.freeCall(call);
        });
        return future;
    }

    private CompletableFuture<Long> release(long threadId) {
        CompletableFuture<Long> future = new CompletableFuture<>();
        client.withHandle(h -> {
            nativeRelease(h, names, kinds, threadId, future);
            return null;
        });
        return future;
    }

    private static long currentThreadId() {
        return Thread.currentThread().getId();
    }

    private static <T> T await(CompletableFuture<T> future) {
        try {
            return future.join();
        } catch (CompletionException e) {
            throw NativeLock.rethrow(e.getCause());
        }
    }

    /** Wait for an acquisition; an interrupt cancels it (nothing stays held) and throws InterruptedException. */
    private boolean awaitAcquire(CompletableFuture<Long> acquisition, long threadId) throws InterruptedException {
        try {
            return acquisition.get() != null;
        } catch (InterruptedException interrupted) {
            if (!acquisition.cancel(false) && !acquisition.isCompletedExceptionally()
                    && acquisition.getNow(null) != null) {
                // Every part arrived just before the interrupt: give them back, then report the interrupt.
                await(release(threadId));
            }
            throw interrupted;
        } catch (ExecutionException e) {
            throw NativeLock.rethrow(e.getCause());
        }
    }

    // ---- Lock

    /** Wait as long as it takes (ignoring interrupts) for every part, then hold them under the watchdog. */
    @Override
    public void lock() {
        lock(WATCHDOG, TimeUnit.MILLISECONDS);
    }

    /** Wait as long as it takes (ignoring interrupts), then hold every part for {@code leaseTime} (-1: watchdog). */
    public void lock(long leaseTime, TimeUnit unit) {
        await(acquire(currentThreadId(), FOREVER, NativeLock.leaseMillis(leaseTime, unit)));
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        lockInterruptibly(WATCHDOG, TimeUnit.MILLISECONDS);
    }

    public void lockInterruptibly(long leaseTime, TimeUnit unit) throws InterruptedException {
        long threadId = currentThreadId();
        awaitAcquire(acquire(threadId, FOREVER, NativeLock.leaseMillis(leaseTime, unit)), threadId);
    }

    /** Try every part once; false (holding none) if anyone holds any of them. */
    @Override
    public boolean tryLock() {
        return await(acquire(currentThreadId(), 0, WATCHDOG)) != null;
    }

    @Override
    public boolean tryLock(long waitTime, TimeUnit unit) throws InterruptedException {
        return tryLock(waitTime, WATCHDOG, unit);
    }

    /** Wait up to {@code waitTime} in all (-1: forever) for every part, then hold each for {@code leaseTime} (-1: watchdog). */
    public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        long threadId = currentThreadId();
        return awaitAcquire(
                acquire(threadId, NativeLock.waitMillis(waitTime, unit), NativeLock.leaseMillis(leaseTime, unit)), threadId);
    }

    /**
     * Release one hold of every part by the calling thread. Every part is released even if one fails; then the first
     * failure is thrown ({@link IllegalMonitorStateException} for a part it did not hold, LOST for a lost one).
     */
    @Override
    public void unlock() {
        await(release(currentThreadId()));
    }

    /** Not offered, as with Redisson's MultiLock. */
    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("polylock multi-locks do not offer conditions");
    }

    // ---- beyond Lock

    /** Whether the calling thread holds every part through this client (none of them lost). */
    public boolean isHeldByCurrentThread() {
        long threadId = currentThreadId();
        return client.withHandle(h -> nativeIsHeld(h, names, kinds, threadId));
    }

    /** The fencing token of the calling thread's hold of each part, in the order the locks were listed (null: not held). */
    public Long[] getTokens() {
        long threadId = currentThreadId();
        long[] tokens = client.withHandle(h -> nativeTokens(h, names, kinds, threadId));
        return Arrays.stream(tokens).mapToObj(token -> token < 0 ? null : token).toArray(Long[]::new);
    }

    public CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit, long threadId) {
        return NativeLock.derive(acquire(threadId, FOREVER, NativeLock.leaseMillis(leaseTime, unit)), taken -> null);
    }

    /** Completes with whether every part was taken within {@code waitTime} in all; cancelling it stops the wait. */
    public CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit, long threadId) {
        return NativeLock.derive(
                acquire(threadId, NativeLock.waitMillis(waitTime, unit), NativeLock.leaseMillis(leaseTime, unit)),
                taken -> taken != null);
    }

    public CompletableFuture<Void> unlockAsync(long threadId) {
        return release(threadId).thenApply(nothing -> null);
    }

    @Override
    public String toString() {
        return "MultiLock{names=" + Arrays.toString(names) + ", client=" + client.getId() + "}";
    }
}
