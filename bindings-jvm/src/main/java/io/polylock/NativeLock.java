package io.polylock;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.function.Function;

/** The one implementation of {@link RLock} and {@link RFencedLock}: every call is a translation to the native core. */
final class NativeLock implements RFencedLock {
    private static final long FOREVER = -1;
    private static final long WATCHDOG = -1;

    private final PolylockClient client;
    private final String name;
    private final int kind;

    NativeLock(PolylockClient client, String name, int kind) {
        this.client = client;
        this.name = name;
        this.kind = kind;
    }

    @Override
    public String getName() {
        return name;
    }

    /** The kind code (NativeBridge.KIND_*) and client of this lock, for a multi-lock over it. */
    int kind() {
        return kind;
    }

    PolylockClient client() {
        return client;
    }

    // ---- the native calls everything below is made of

    /** Completes with the fencing token, or null when the wait ran out. */
    private CompletableFuture<Long> acquire(long threadId, long waitMs, long leaseMs) {
        return acquire(threadId, waitMs, leaseMs, false);
    }

    /** Completes with the fencing token; when the wait ran out, with null, or with TIMEOUT if {@code waiting}. */
    private CompletableFuture<Long> acquire(long threadId, long waitMs, long leaseMs, boolean waiting) {
        CompletableFuture<Long> future = new CompletableFuture<>();
        long call = client.withHandle(
                h -> NativeBridge.acquire(h, name, kind, threadId, waitMs, leaseMs, waiting, future));
        future.whenComplete((token, error) -> {
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
            NativeBridge.release(h, name, kind, threadId, future);
            return null;
        });
        return future;
    }

    private CompletableFuture<Long> query(int query) {
        CompletableFuture<Long> future = new CompletableFuture<>();
        client.withHandle(h -> {
            NativeBridge.query(h, name, kind, query, future);
            return null;
        });
        return future;
    }

    private static long currentThreadId() {
        return Thread.currentThread().getId();
    }

    /** Redisson's -1 passes through; other times become milliseconds (a positive sub-millisecond time is 1 ms). */
    static long leaseMillis(long time, TimeUnit unit) {
        if (time == WATCHDOG) {
            return WATCHDOG;
        }
        long millis = unit.toMillis(time);
        return time > 0 && millis == 0 ? 1 : millis;
    }

    /**
     * A wait in milliseconds: -1 waits forever (Redisson's meaning), 0 tries once, a positive sub-millisecond time is
     * 1 ms, and any other negative passes through for the core to refuse (INVALID_ARGUMENT, docs/conventions.md).
     */
    static long waitMillis(long time, TimeUnit unit) {
        if (time == FOREVER) {
            return FOREVER;
        }
        long millis = unit.toMillis(time);
        return time > 0 && millis == 0 ? 1 : millis;
    }

    // ---- blocking waits on the futures

    private static <T> T await(CompletableFuture<T> future) {
        try {
            return future.join(); // ignores interrupts, as Redisson's lock() does; the flag stays set
        } catch (CompletionException e) {
            throw rethrow(e.getCause());
        }
    }

    /** Wait for an acquisition; an interrupt cancels it (nothing stays held) and throws InterruptedException. */
    private Long awaitAcquire(CompletableFuture<Long> acquisition, long threadId) throws InterruptedException {
        try {
            return acquisition.get();
        } catch (InterruptedException interrupted) {
            if (!acquisition.cancel(false) && !acquisition.isCompletedExceptionally()) {
                // The hold arrived just before the interrupt: give it back, then report the interrupt.
                Long token = acquisition.getNow(null);
                if (token != null) {
                    await(release(threadId));
                }
            }
            throw interrupted;
        } catch (ExecutionException e) {
            throw rethrow(e.getCause());
        }
    }

    static RuntimeException rethrow(Throwable cause) {
        if (cause instanceof RuntimeException) {
            return (RuntimeException) cause;
        }
        if (cause instanceof Error) {
            throw (Error) cause;
        }
        return new PolylockException(ErrorCode.INTERNAL, String.valueOf(cause));
    }

    /** A derived future whose cancellation reaches the native call. */
    static <T, R> CompletableFuture<R> derive(CompletableFuture<T> source, Function<T, R> map) {
        CompletableFuture<R> derived = source.thenApply(map);
        derived.whenComplete((value, error) -> {
            if (error instanceof CancellationException && derived.isCancelled()) {
                source.cancel(false);
            }
        });
        return derived;
    }

    // ---- java.util.concurrent.locks.Lock

    @Override
    public void lock() {
        lock(WATCHDOG, TimeUnit.MILLISECONDS);
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        lockInterruptibly(WATCHDOG, TimeUnit.MILLISECONDS);
    }

    @Override
    public boolean tryLock() {
        return tryLockAndGetToken() != null;
    }

    @Override
    public boolean tryLock(long waitTime, TimeUnit unit) throws InterruptedException {
        return tryLock(waitTime, WATCHDOG, unit);
    }

    @Override
    public void unlock() {
        await(release(currentThreadId()));
    }

    /** Not offered, as with Redisson's RLock: use a distributed queue or a topic to signal across processes. */
    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("polylock locks do not offer conditions");
    }

    // ---- RLock

    @Override
    public void lock(long leaseTime, TimeUnit unit) {
        lockAndGetToken(leaseTime, unit);
    }

    @Override
    public void lockInterruptibly(long leaseTime, TimeUnit unit) throws InterruptedException {
        long threadId = currentThreadId();
        awaitAcquire(acquire(threadId, FOREVER, leaseMillis(leaseTime, unit)), threadId);
    }

    @Override
    public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        return tryLockAndGetToken(waitTime, leaseTime, unit) != null;
    }

    @Override
    public void lockWithin(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        long threadId = currentThreadId();
        awaitAcquire(acquire(threadId, waitMillis(waitTime, unit), leaseMillis(leaseTime, unit), true), threadId);
    }

    @Override
    public boolean forceUnlock() {
        return await(forceUnlockAsync());
    }

    @Override
    public boolean isLocked() {
        return await(isLockedAsync());
    }

    @Override
    public boolean isHeldByCurrentThread() {
        return isHeldByThread(currentThreadId());
    }

    @Override
    public boolean isHeldByThread(long threadId) {
        return client.withHandle(h -> NativeBridge.holdCount(h, name, kind, threadId)) > 0;
    }

    @Override
    public int getHoldCount() {
        long threadId = currentThreadId();
        return client.withHandle(h -> NativeBridge.holdCount(h, name, kind, threadId));
    }

    @Override
    public boolean isLost() {
        return getLostReason() != null;
    }

    @Override
    public String getLostReason() {
        long threadId = currentThreadId();
        return client.withHandle(h -> NativeBridge.lostReason(h, name, kind, threadId));
    }

    @Override
    public CompletableFuture<String> onLost() {
        return onLost(currentThreadId());
    }

    @Override
    public CompletableFuture<String> onLost(long threadId) {
        // The native wait completes `watch`: exceptionally with the loss (LOST, or CONNECTION when the client closed
        // first), or with null once the hold is given back unlost, when `lost` stays incomplete.
        CompletableFuture<Long> watch = new CompletableFuture<>();
        long call = client.withHandle(h -> NativeBridge.watchLost(h, name, kind, threadId, watch));
        CompletableFuture<String> lost = new CompletableFuture<>();
        watch.whenComplete((nothing, error) -> {
            if (watch.isCancelled()) {
                NativeBridge.cancel(call);
            } else if (error != null) {
                lost.complete(error.getMessage());
            }
            NativeBridge.freeCall(call);
        });
        lost.whenComplete((reason, error) -> {
            if (lost.isCancelled()) {
                watch.cancel(false);
            }
        });
        return lost;
    }

    @Override
    public long remainTimeToLive() {
        return await(remainTimeToLiveAsync());
    }

    @Override
    public CompletableFuture<Void> lockAsync() {
        return lockAsync(WATCHDOG, TimeUnit.MILLISECONDS, currentThreadId());
    }

    @Override
    public CompletableFuture<Void> lockAsync(long threadId) {
        return lockAsync(WATCHDOG, TimeUnit.MILLISECONDS, threadId);
    }

    @Override
    public CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit) {
        return lockAsync(leaseTime, unit, currentThreadId());
    }

    @Override
    public CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit, long threadId) {
        return derive(lockAndGetTokenAsync(leaseTime, unit, threadId), token -> null);
    }

    @Override
    public CompletableFuture<Boolean> tryLockAsync() {
        return tryLockAsync(0, WATCHDOG, TimeUnit.MILLISECONDS, currentThreadId());
    }

    @Override
    public CompletableFuture<Boolean> tryLockAsync(long threadId) {
        return tryLockAsync(0, WATCHDOG, TimeUnit.MILLISECONDS, threadId);
    }

    @Override
    public CompletableFuture<Boolean> tryLockAsync(long waitTime, TimeUnit unit) {
        return tryLockAsync(waitTime, WATCHDOG, unit, currentThreadId());
    }

    @Override
    public CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit) {
        return tryLockAsync(waitTime, leaseTime, unit, currentThreadId());
    }

    @Override
    public CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit, long threadId) {
        return derive(tryLockAndGetTokenAsync(waitTime, leaseTime, unit, threadId), token -> token != null);
    }

    @Override
    public CompletableFuture<Void> unlockAsync() {
        return unlockAsync(currentThreadId());
    }

    @Override
    public CompletableFuture<Void> unlockAsync(long threadId) {
        return release(threadId).thenApply(nothing -> null);
    }

    @Override
    public CompletableFuture<Boolean> forceUnlockAsync() {
        return query(NativeBridge.QUERY_FORCE_UNLOCK).thenApply(removed -> removed == 1);
    }

    @Override
    public CompletableFuture<Boolean> isLockedAsync() {
        return query(NativeBridge.QUERY_IS_LOCKED).thenApply(locked -> locked == 1);
    }

    @Override
    public CompletableFuture<Long> remainTimeToLiveAsync() {
        return query(NativeBridge.QUERY_REMAINING);
    }

    // ---- RFencedLock

    @Override
    public Long getToken() {
        long threadId = currentThreadId();
        long token = client.withHandle(h -> NativeBridge.token(h, name, kind, threadId));
        return token < 0 ? null : token;
    }

    @Override
    public Long lockAndGetToken() {
        return lockAndGetToken(WATCHDOG, TimeUnit.MILLISECONDS);
    }

    @Override
    public Long lockAndGetToken(long leaseTime, TimeUnit unit) {
        return await(acquire(currentThreadId(), FOREVER, leaseMillis(leaseTime, unit)));
    }

    @Override
    public Long tryLockAndGetToken() {
        return await(acquire(currentThreadId(), 0, WATCHDOG));
    }

    @Override
    public Long tryLockAndGetToken(long waitTime, TimeUnit unit) throws InterruptedException {
        return tryLockAndGetToken(waitTime, WATCHDOG, unit);
    }

    @Override
    public Long tryLockAndGetToken(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        long threadId = currentThreadId();
        return awaitAcquire(acquire(threadId, waitMillis(waitTime, unit), leaseMillis(leaseTime, unit)), threadId);
    }

    @Override
    public CompletableFuture<Long> lockAndGetTokenAsync() {
        return lockAndGetTokenAsync(WATCHDOG, TimeUnit.MILLISECONDS, currentThreadId());
    }

    @Override
    public CompletableFuture<Long> lockAndGetTokenAsync(long leaseTime, TimeUnit unit, long threadId) {
        return acquire(threadId, FOREVER, leaseMillis(leaseTime, unit));
    }

    @Override
    public CompletableFuture<Long> tryLockAndGetTokenAsync(long waitTime, long leaseTime, TimeUnit unit, long threadId) {
        return acquire(threadId, waitMillis(waitTime, unit), leaseMillis(leaseTime, unit));
    }

    @Override
    public String toString() {
        return "RLock{name=" + name + ", client=" + client.getId() + "}";
    }
}
