package io.polylock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.polylock.Backends.Backend;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** VersionedValue.watch(): the kit's shared watch through JNI, on every backend. */
class ValueWatchTest {
    static Stream<Backend> backends() {
        return Backends.all().stream();
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void aWatchSeesAnotherClientsCreateUpdateAndDelete(Backend backend) throws Exception {
        String name = Backends.uniqueName("watched");
        try (PolylockClient watcher = backend.connect(); PolylockClient writer = backend.connect();
                ValueWatch watch = watcher.getVersionedValue(name).watch()) {
            assertEquals(name, watch.getName());
            assertNull(watch.current(), "no value when the watch started");
            ValueChange quiet = watch.changed(100, TimeUnit.MILLISECONDS);
            assertEquals(ValueChange.Kind.NO_CHANGE, quiet.getKind());
            assertFalse(quiet.isChanged());
            assertNull(quiet.getValue());

            VersionedValue value = writer.getVersionedValue(name);
            long v1 = value.create(bytes("one"));
            ValueChange created = watch.changed(10, TimeUnit.SECONDS);
            assertEquals(ValueChange.Kind.UPDATED, created.getKind(), backend.label);
            assertTrue(created.isChanged());
            assertEquals("one", created.getValue().getValueAsString());
            assertEquals(v1, created.getValue().getVersion());
            assertEquals(v1, watch.current().getVersion(), "current() is the last state a wait returned");

            long v2 = value.compareAndSet(v1, bytes("two"));
            ValueChange updated = watch.changed();
            assertEquals("two", updated.getValue().getValueAsString());
            assertEquals(v2, updated.getValue().getVersion());

            value.delete(v2);
            ValueChange deleted = watch.changed(10, TimeUnit.SECONDS);
            assertEquals(ValueChange.Kind.DELETED, deleted.getKind());
            assertTrue(deleted.isChanged());
            assertNull(deleted.getValue());
            assertNull(watch.current());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void closeFromAnotherThreadEndsAWaitInProgressAndEveryLaterOne(Backend backend) throws Exception {
        String name = Backends.uniqueName("closed");
        try (PolylockClient client = backend.connect()) {
            VersionedValue value = client.getVersionedValue(name);
            long version = value.create(bytes("there"));
            ValueWatch watch = value.watch();
            assertEquals(version, watch.current().getVersion(), "the value as the watch started");
            AtomicReference<Object> seen = new AtomicReference<>();
            CountDownLatch waiting = new CountDownLatch(1);
            Thread waiter = new Thread(() -> {
                waiting.countDown();
                try {
                    seen.set(watch.changed());
                } catch (Throwable e) {
                    seen.set(e);
                }
            });
            waiter.start();
            waiting.await();
            Thread.sleep(200);
            assertTrue(waiter.isAlive(), "nothing changed: the wait goes on");
            long started = System.nanoTime();
            watch.close();
            waiter.join(10_000);
            assertFalse(waiter.isAlive(), "close ended the wait");
            assertTrue(System.nanoTime() - started < TimeUnit.SECONDS.toNanos(5));
            assertEquals(ValueChange.Kind.CLOSED, ((ValueChange) seen.get()).getKind());
            assertTrue(watch.isClosed());
            assertEquals(ValueChange.Kind.CLOSED, watch.changed(5, TimeUnit.SECONDS).getKind(), "every later wait");
            watch.close(); // twice is harmless
            assertEquals(version, watch.current().getVersion(), "the last state stays readable");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void aCancelledOrInterruptedWaitLosesNothing(Backend backend) throws Exception {
        String name = Backends.uniqueName("cancelled");
        try (PolylockClient client = backend.connect(); ValueWatch watch = client.getVersionedValue(name).watch()) {
            CompletableFuture<ValueChange> pending = watch.changedAsync(-1, TimeUnit.MILLISECONDS);
            assertThrows(TimeoutException.class, () -> pending.get(100, TimeUnit.MILLISECONDS));
            assertTrue(pending.cancel(false));

            AtomicReference<Throwable> thrown = new AtomicReference<>();
            Thread waiter = new Thread(() -> {
                try {
                    watch.changed();
                } catch (Throwable e) {
                    thrown.set(e);
                }
            });
            waiter.start();
            Thread.sleep(100);
            waiter.interrupt();
            waiter.join(10_000);
            assertInstanceOf(InterruptedException.class, thrown.get());

            long version = client.getVersionedValue(name).create(bytes("after"));
            ValueChange next = watch.changedAsync(10, TimeUnit.SECONDS).get(20, TimeUnit.SECONDS);
            assertEquals(ValueChange.Kind.UPDATED, next.getKind(), "the queue behind the cancelled waits moved on");
            assertEquals(version, next.getValue().getVersion());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void badWaitsAreRefusedAndAClosedClientEndsTheWait(Backend backend) throws Exception {
        PolylockClient client = backend.connect();
        ValueWatch watch = client.getVersionedValue(Backends.uniqueName("bad")).watch();
        assertEquals(ErrorCode.INVALID_ARGUMENT,
                assertThrows(PolylockException.class, () -> watch.changed(-2, TimeUnit.MILLISECONDS)).getCode());
        assertEquals(ValueChange.Kind.NO_CHANGE, watch.changed(0, TimeUnit.MILLISECONDS).getKind(), "0 looks once");
        CompletableFuture<ValueChange> pending = watch.changedAsync(-1, TimeUnit.MILLISECONDS);
        client.close();
        ExecutionException failed = assertThrows(ExecutionException.class, () -> pending.get(10, TimeUnit.SECONDS));
        assertEquals(ErrorCode.CONNECTION, ((PolylockException) failed.getCause()).getCode());
        watch.close(); // after the client closed: harmless
        assertTrue(watch.isClosed());
        assertEquals(ErrorCode.CONNECTION,
                assertThrows(PolylockException.class, () -> client.getVersionedValue("x").watch()).getCode());
    }
}
