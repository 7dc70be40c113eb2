package io.polylock;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A reentrant lock whose acquisitions return a fencing token: strictly greater than every token issued before for
 * this name, on every backend. On Redis the counter is Redisson's {@code RFencedLock} counter, so tokens from both
 * libraries form one increasing sequence. Pass the token to the storage you protect and have it reject older ones.
 */
public interface RFencedLock extends RLock {
    /** The token of the calling thread's current hold, or null if it holds none. Reentry keeps the token. */
    Long getToken();

    Long lockAndGetToken();

    Long lockAndGetToken(long leaseTime, TimeUnit unit);

    /** Try once; the token, or null if someone else holds the lock. */
    Long tryLockAndGetToken();

    Long tryLockAndGetToken(long waitTime, TimeUnit unit) throws InterruptedException;

    Long tryLockAndGetToken(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    CompletableFuture<Long> lockAndGetTokenAsync();

    CompletableFuture<Long> lockAndGetTokenAsync(long leaseTime, TimeUnit unit, long threadId);

    /** Completes with the token, or null if the wait ran out. */
    CompletableFuture<Long> tryLockAndGetTokenAsync(long waitTime, long leaseTime, TimeUnit unit, long threadId);
}
