package io.polylock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.polylock.Backends.Backend;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** RLock's lost state and signal (isLost, getLostReason, onLost), on every backend. */
class LockLostTest {
    static Stream<Backend> backends() {
        return Backends.all().stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void aLeaseThatRunsOutIsLostSignalledAndReportedByUnlock(Backend backend) throws Exception {
        try (PolylockClient client = backend.connect()) {
            RLock lock = client.getLock(Backends.uniqueName("lease-ends"));
            assertFalse(lock.isLost(), "holds nothing");
            lock.lock(400, TimeUnit.MILLISECONDS);
            long started = System.nanoTime();
            assertFalse(lock.isLost());
            assertNull(lock.getLostReason());
            CompletableFuture<String> lost = lock.onLost();
            String reason = lost.get(10, TimeUnit.SECONDS);
            assertTrue(System.nanoTime() - started >= TimeUnit.MILLISECONDS.toNanos(250), "not before the lease ended");
            assertTrue(reason.contains("lease"), reason);
            assertTrue(lock.isLost(), backend.label);
            assertEquals(reason, lock.getLostReason());
            assertEquals(reason, lock.onLost().get(1, TimeUnit.SECONDS), "a lost hold's onLost completes at once");
            PolylockException unlock = assertThrows(PolylockException.class, lock::unlock);
            assertEquals(ErrorCode.LOST, unlock.getCode());
            assertFalse(lock.isLost(), "given up: it holds nothing now");
            assertThrows(IllegalMonitorStateException.class, lock::onLost);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void aLiveHoldsSignalStaysQuietThroughItsRelease(Backend backend) throws Exception {
        try (PolylockClient client = backend.connect()) {
            RLock lock = client.getLock(Backends.uniqueName("live"));
            assertThrows(IllegalMonitorStateException.class, lock::onLost, "nothing held, nothing to lose");
            lock.lock();
            CompletableFuture<String> lost = lock.onLost();
            CompletableFuture<String> cancelled = lock.onLost();
            assertThrows(TimeoutException.class, () -> lost.get(300, TimeUnit.MILLISECONDS));
            assertTrue(cancelled.cancel(false));
            assertTrue(lock.isHeldByCurrentThread(), "cancelling the signal leaves the hold alone");
            lock.unlock();
            Thread.sleep(100);
            assertFalse(lost.isDone(), "a hold given back was never lost");
            assertFalse(lock.isLost());

            // The next hold of the same thread has a signal of its own.
            lock.lock(300, TimeUnit.MILLISECONDS);
            assertNotNull(lock.onLost().get(10, TimeUnit.SECONDS));
            assertFalse(lost.isDone(), "the first hold's signal is not the second's");
            assertEquals(ErrorCode.LOST, assertThrows(PolylockException.class, lock::unlock).getCode());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void aForcedUnlockOrAClosedClientIsALoss(Backend backend) throws Exception {
        String name = Backends.uniqueName("forced");
        PolylockClient client = backend.connect();
        RLock lock = client.getLock(name);
        if (!backend.isSqlSession()) { // SQL session locks refuse forceUnlock (only their session may release)
            lock.lock();
            CompletableFuture<String> lost = lock.onLost();
            assertTrue(lock.forceUnlock());
            assertNotNull(lost.get(10, TimeUnit.SECONDS), "this client's own hold is marked lost at once");
            assertTrue(lock.isLost());
            assertEquals(ErrorCode.LOST, assertThrows(PolylockException.class, lock::unlock).getCode());
        }
        // An explicit owner, as the async overloads take it.
        long owner = 4242;
        lock.lockAsync(-1, TimeUnit.MILLISECONDS, owner).get(10, TimeUnit.SECONDS);
        CompletableFuture<String> closed = lock.onLost(owner);
        client.close();
        assertNotNull(closed.get(10, TimeUnit.SECONDS), "closing the client gives the hold up");
        assertEquals(ErrorCode.CONNECTION, assertThrows(PolylockException.class, lock::isLost).getCode());
    }
}
