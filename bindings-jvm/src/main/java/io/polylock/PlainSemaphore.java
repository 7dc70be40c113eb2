package io.polylock;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/** {@link RSemaphore} over the core's plain semaphore (Redisson's RSemaphore layout): translation only. */
final class PlainSemaphore implements RSemaphore {
    private static final long FOREVER = -1; // NativeLock's convention for waits

    // The calls of `call`, as bindings-jvm/src/semaphore.rs numbers them.
    private static final int TRY_SET_PERMITS = 0;
    private static final int RELEASE = 1;
    private static final int AVAILABLE = 2;
    private static final int ADD_PERMITS = 3;
    private static final int DRAIN = 4;

    private final PolylockClient client;
    private final String name;

    PlainSemaphore(PolylockClient client, String name) {
        this.client = client;
        this.name = name;
        client.withHandle(h -> {
            nativeCheck(h, name);
            return null;
        });
    }

    private static native void nativeCheck(long client, String name);

    private static native long nativeAcquire(long client, String name, int permits, long waitMs, CompletableFuture<Long> future);

    private static native void nativeCall(long client, String name, int op, int argument, CompletableFuture<Long> future);

    @Override
    public String getName() {
        return name;
    }

    private Long run(int op, int argument) {
        CompletableFuture<Long> future = new CompletableFuture<>();
        client.withHandle(h -> {
            nativeCall(h, name, op, argument, future);
            return null;
        });
        try {
            return future.join();
        } catch (CompletionException e) {
            throw NativeLock.rethrow(e.getCause());
        }
    }

    private static int permits(int permits) {
        if (permits < 0) {
            throw new IllegalArgumentException("Permits amount can't be negative");
        }
        return permits;
    }

    @Override
    public boolean trySetPermits(int permits) {
        return run(TRY_SET_PERMITS, permits(permits)) == 1;
    }

    /** Completes with the count taken, or null when the wait ran out. */
    private CompletableFuture<Long> acquireAsync(int permits, long waitMs) {
        CompletableFuture<Long> future = new CompletableFuture<>();
        long call = client.withHandle(h -> nativeAcquire(h, name, permits(permits), waitMs, future));
        future.whenComplete((taken, error) -> {
            if (future.isCancelled()) {
                NativeBridge.cancel(call);
            }
            NativeBridge.freeCall(call);
        });
        return future;
    }

    /** Wait for permits; an interrupt cancels the wait (nothing stays taken) and throws InterruptedException. */
    private boolean await(CompletableFuture<Long> acquisition, int permits) throws InterruptedException {
        try {
            return acquisition.get() != null;
        } catch (InterruptedException interrupted) {
            if (!acquisition.cancel(false) && !acquisition.isCompletedExceptionally()) {
                if (acquisition.getNow(null) != null) {
                    release(permits); // arrived just before the interrupt: give them back
                }
            }
            throw interrupted;
        } catch (ExecutionException e) {
            throw NativeLock.rethrow(e.getCause());
        }
    }

    @Override
    public void acquire() throws InterruptedException {
        acquire(1);
    }

    @Override
    public void acquire(int permits) throws InterruptedException {
        await(acquireAsync(permits, FOREVER), permits);
    }

    @Override
    public boolean tryAcquire() {
        return tryAcquire(1);
    }

    @Override
    public boolean tryAcquire(int permits) {
        try {
            return acquireAsync(permits, 0).join() != null;
        } catch (CompletionException e) {
            throw NativeLock.rethrow(e.getCause());
        }
    }

    @Override
    public boolean tryAcquire(long waitTime, TimeUnit unit) throws InterruptedException {
        return tryAcquire(1, waitTime, unit);
    }

    @Override
    public boolean tryAcquire(int permits, long waitTime, TimeUnit unit) throws InterruptedException {
        return await(acquireAsync(permits, NativeLock.waitMillis(waitTime, unit)), permits);
    }

    @Override
    public void release() {
        release(1);
    }

    @Override
    public void release(int permits) {
        run(RELEASE, permits(permits));
    }

    @Override
    public int availablePermits() {
        return Math.toIntExact(run(AVAILABLE, 0));
    }

    @Override
    public int drainPermits() {
        return Math.toIntExact(run(DRAIN, 0));
    }

    @Override
    public void addPermits(int permits) {
        run(ADD_PERMITS, permits);
    }
}
