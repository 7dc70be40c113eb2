package io.polylock;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/** {@link RCountDownLatch} over the core's countdown latch: translation only (bindings-jvm/src/latch.rs). */
final class NativeCountDownLatch implements RCountDownLatch {
    private static final long FOREVER = -1; // NativeLock's convention for waits

    // The calls of `nativeCall`, as bindings-jvm/src/latch.rs numbers them.
    private static final int TRY_SET_COUNT = 0;
    private static final int COUNT_DOWN = 1;
    private static final int GET_COUNT = 2;

    private final PolylockClient client;
    private final String name;

    NativeCountDownLatch(PolylockClient client, String name) {
        this.client = client;
        this.name = Objects.requireNonNull(name, "name");
        client.withHandle(h -> {
            nativeCheck(h, name);
            return null;
        });
    }

    private static native void nativeCheck(long client, String name);

    private static native void nativeCall(long client, String name, int op, long argument, CompletableFuture<Long> future);

    private static native long nativeAwait(long client, String name, long waitMs, boolean waiting,
            CompletableFuture<Long> future);

    @Override
    public String getName() {
        return name;
    }

    private Long run(int op, long argument) {
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

    @Override
    public boolean trySetCount(long count) {
        return run(TRY_SET_COUNT, count) == 1;
    }

    @Override
    public void countDown() {
        run(COUNT_DOWN, 0);
    }

    @Override
    public long getCount() {
        return run(GET_COUNT, 0);
    }

    /**
     * True once the count is zero; when {@code waitMs} ran out, false, or TIMEOUT if {@code waiting}. An interrupt
     * cancels the wait.
     */
    private boolean awaitZero(long waitMs, boolean waiting) throws InterruptedException {
        CompletableFuture<Long> future = new CompletableFuture<>();
        long call = client.withHandle(h -> nativeAwait(h, name, waitMs, waiting, future));
        future.whenComplete((opened, error) -> {
            if (future.isCancelled()) {
                NativeBridge.cancel(call);
            }
            NativeBridge.freeCall(call);
        });
        try {
            return future.get() != null;
        } catch (InterruptedException interrupted) {
            future.cancel(false); // waiting holds nothing: stopping it is all there is to do
            throw interrupted;
        } catch (ExecutionException e) {
            throw NativeLock.rethrow(e.getCause());
        }
    }

    @Override
    public void await() throws InterruptedException {
        awaitZero(FOREVER, true);
    }

    @Override
    public boolean await(long time, TimeUnit unit) throws InterruptedException {
        return awaitZero(Math.max(0, unit.toMillis(time)), false);
    }

    @Override
    public void awaitZero(long time, TimeUnit unit) throws InterruptedException {
        awaitZero(NativeLock.waitMillis(time, unit), true);
    }

    @Override
    public String toString() {
        return "NativeCountDownLatch[" + name + "]";
    }
}
