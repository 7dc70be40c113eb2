package io.polylock;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/** {@link RPermitExpirableSemaphore} over the native semaphore calls; permit ids are the native ids in hex. */
final class PermitExpirableSemaphore implements RPermitExpirableSemaphore {
    private static final long FOREVER = -1; // NativeLock's conventions for waits and leases
    private static final long WATCHDOG = -1;

    private final PolylockClient client;
    private final String name;
    private volatile int permits;

    PermitExpirableSemaphore(PolylockClient client, String name) {
        this.client = client;
        this.name = name;
    }

    @Override
    public String getName() {
        return name;
    }

    @Override
    public synchronized boolean trySetPermits(int permits) {
        if (permits < 1) {
            throw new PolylockException(ErrorCode.INVALID_ARGUMENT, "a semaphore needs at least one permit, got " + permits);
        }
        if (this.permits != 0) {
            return this.permits == permits;
        }
        this.permits = permits;
        return true;
    }

    private int permits() {
        int count = permits;
        if (count == 0) {
            throw new IllegalStateException("semaphore '" + name + "' has no permit count yet: call trySetPermits first");
        }
        return count;
    }

    /** Completes with {permit id, fencing token}, or null when the wait ran out. */
    private CompletableFuture<long[]> acquireAsync(long waitMs, long leaseMs) {
        return acquireAsync(waitMs, leaseMs, false);
    }

    /** Completes with {permit id, fencing token}; when the wait ran out, with null, or with TIMEOUT if {@code waiting}. */
    private CompletableFuture<long[]> acquireAsync(long waitMs, long leaseMs, boolean waiting) {
        int count = permits();
        CompletableFuture<long[]> future = new CompletableFuture<>();
        long call = client.withHandle(
                h -> NativeBridge.semaphoreAcquire(h, name, count, waitMs, leaseMs, waiting, future));
        future.whenComplete((permit, error) -> {
            if (future.isCancelled()) {
                NativeBridge.cancel(call);
            }
            NativeBridge.freeCall(call);
        });
        return future;
    }

    private static Permit permit(long[] idAndToken) {
        return idAndToken == null ? null : new Permit(Long.toHexString(idAndToken[0]), idAndToken[1]);
    }

    private static String id(Permit permit) {
        return permit == null ? null : permit.getId();
    }

    /** Wait for a permit; an interrupt cancels the wait (no permit stays taken) and throws InterruptedException. */
    private Permit await(CompletableFuture<long[]> acquisition) throws InterruptedException {
        try {
            return permit(acquisition.get());
        } catch (InterruptedException interrupted) {
            if (!acquisition.cancel(false) && !acquisition.isCompletedExceptionally()) {
                Permit permit = permit(acquisition.getNow(null));
                if (permit != null) {
                    release(permit); // arrived just before the interrupt: give it back
                }
            }
            throw interrupted;
        } catch (ExecutionException e) {
            throw NativeLock.rethrow(e.getCause());
        }
    }

    @Override
    public String acquire() throws InterruptedException {
        return acquirePermit().getId();
    }

    @Override
    public String acquire(long leaseTime, TimeUnit unit) throws InterruptedException {
        return acquirePermit(leaseTime, unit).getId();
    }

    @Override
    public String tryAcquire() {
        return id(tryAcquirePermit());
    }

    @Override
    public String tryAcquire(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        return id(tryAcquirePermit(waitTime, leaseTime, unit));
    }

    @Override
    public String acquireWithin(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        return acquirePermitWithin(waitTime, leaseTime, unit).getId();
    }

    @Override
    public Permit acquirePermit() throws InterruptedException {
        return await(acquireAsync(FOREVER, WATCHDOG));
    }

    @Override
    public Permit acquirePermit(long leaseTime, TimeUnit unit) throws InterruptedException {
        return await(acquireAsync(FOREVER, NativeLock.leaseMillis(leaseTime, unit)));
    }

    @Override
    public Permit tryAcquirePermit() {
        try {
            return permit(acquireAsync(0, WATCHDOG).join());
        } catch (CompletionException e) {
            throw NativeLock.rethrow(e.getCause());
        }
    }

    @Override
    public Permit tryAcquirePermit(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        return await(acquireAsync(NativeLock.waitMillis(waitTime, unit), NativeLock.leaseMillis(leaseTime, unit)));
    }

    @Override
    public Permit acquirePermitWithin(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        return await(acquireAsync(NativeLock.waitMillis(waitTime, unit), NativeLock.leaseMillis(leaseTime, unit),
                true));
    }

    @Override
    public void release(Permit permit) {
        release(Objects.requireNonNull(permit, "permit").getId());
    }

    @Override
    public void release(String permitId) {
        long id;
        try {
            id = Long.parseUnsignedLong(permitId, 16);
        } catch (NumberFormatException | NullPointerException e) {
            throw new PolylockException(ErrorCode.INVALID_ARGUMENT, "'" + permitId + "' is not a permit id of this semaphore");
        }
        int count = permits();
        CompletableFuture<Long> future = new CompletableFuture<>();
        client.withHandle(h -> {
            NativeBridge.semaphoreRelease(h, name, count, id, future);
            return null;
        });
        try {
            future.join();
        } catch (CompletionException e) {
            throw NativeLock.rethrow(e.getCause());
        }
    }
}
