package io.polylock;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.polylock.Backends.Backend;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Issue 22 through the Java API, on every backend: versioned values, fenced writes, idempotency keys. */
class ValuesAndIdempotencyTest {
    static Stream<Backend> backends() {
        return Backends.all().stream();
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void compareAndSetCarriesTheCurrentValueOnConflict(Backend backend) {
        try (PolylockClient client = backend.connect()) {
            VersionedValue value = client.getVersionedValue(Backends.uniqueName("value"));
            assertNull(value.get());
            long v1 = value.create(bytes("one"));
            ConflictException exists = assertThrows(ConflictException.class, () -> value.create(bytes("again")));
            assertEquals(ErrorCode.CONFLICT, exists.getCode());
            assertArrayEquals(bytes("one"), exists.getCurrentValue());
            assertEquals(v1, exists.getCurrentVersion());

            long v2 = value.compareAndSet(v1, bytes("two"));
            assertTrue(v2 != v1);
            Versioned now = value.get();
            assertEquals("two", now.getValueAsString());
            assertEquals(v2, now.getVersion());
            assertNull(now.getFencingToken());

            ConflictException stale = assertThrows(ConflictException.class, () -> value.compareAndSet(v1, bytes("x")));
            assertArrayEquals(bytes("two"), stale.getCurrentValue());
            assertEquals(v2, stale.getCurrentVersion());
            assertThrows(ConflictException.class, () -> value.delete(v1));
            value.delete(v2);
            assertNull(value.get());
            ConflictException gone = assertThrows(ConflictException.class, () -> value.compareAndSet(v2, bytes("y")));
            assertNull(gone.getCurrentValue());
            assertNull(gone.getCurrentVersion());
            long v3 = value.create(bytes("three"));
            assertTrue(v3 != v2, "versions keep growing across a delete and re-create");
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> value.compareAndSet(-1, bytes("z"))).getCode());
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> value.create(null)).getCode());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void concurrentIncrementsByCompareAndSetLoseNothing(Backend backend) throws Exception {
        String name = Backends.uniqueName("counter");
        int threads = 4;
        int increments = 25;
        try (PolylockClient a = backend.connect(); PolylockClient b = backend.connect()) {
            a.getVersionedValue(name).create(bytes("0"));
            AtomicInteger retries = new AtomicInteger();
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                List<Future<?>> done = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    VersionedValue value = (t % 2 == 0 ? a : b).getVersionedValue(name);
                    done.add(pool.submit(() -> {
                        for (int i = 0; i < increments; i++) {
                            Versioned current = value.get();
                            while (true) {
                                long next = Long.parseLong(current.getValueAsString()) + 1;
                                try {
                                    value.compareAndSet(current.getVersion(), bytes(Long.toString(next)));
                                    break;
                                } catch (ConflictException conflict) {
                                    retries.incrementAndGet();
                                    current = new Versioned(conflict.getCurrentValue(), conflict.getCurrentVersion(), -1);
                                }
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> future : done) {
                    future.get();
                }
            } finally {
                pool.shutdownNow();
            }
            assertEquals(Integer.toString(threads * increments), a.getVersionedValue(name).get().getValueAsString(),
                    "after " + retries.get() + " retries");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void fencedWritesRefuseATakenOverHolder(Backend backend) throws Exception {
        String name = Backends.uniqueName("fenced");
        try (PolylockClient first = backend.connect(); PolylockClient second = backend.connect()) {
            VersionedValue value = first.getVersionedValue(name + ":state");
            RFencedLock lockA = first.getFencedLock(name);
            Long oldToken = lockA.tryLockAndGetToken(5, -1, java.util.concurrent.TimeUnit.SECONDS);
            assertNotNull(oldToken);
            value.writeFenced(oldToken, bytes("by the first holder"));
            lockA.unlock(); // as if its lease ran out while the first holder was paused, before its last write
            RFencedLock lockB = second.getFencedLock(name);
            Long newToken = lockB.tryLockAndGetToken(5, -1, java.util.concurrent.TimeUnit.SECONDS);
            assertNotNull(newToken);
            assertTrue(newToken > oldToken);
            long written = second.getVersionedValue(name + ":state").writeFenced(newToken, bytes("by the second"));
            FencedException refused =
                    assertThrows(FencedException.class, () -> value.writeFenced(oldToken, bytes("stale")));
            assertEquals(ErrorCode.FENCED, refused.getCode());
            assertEquals(newToken, refused.getWinningToken());
            Versioned now = value.get();
            assertEquals("by the second", now.getValueAsString());
            assertEquals(written, now.getVersion());
            assertEquals(newToken, now.getFencingToken());
            lockB.unlock();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void runDoesTheWorkOnceAndReplaysItsResponse(Backend backend) throws Exception {
        try (PolylockClient client = backend.connect()) {
            Idempotency payments = client.getIdempotency(Backends.uniqueName("payments"));
            String key = "order-1";
            byte[] fingerprint = bytes("sha256-of-payload");
            AtomicInteger runs = new AtomicInteger();
            long caller = Thread.currentThread().getId();
            byte[] first = payments.run(key, fingerprint, () -> {
                runs.incrementAndGet();
                assertEquals(caller, Thread.currentThread().getId(), "the work runs on the caller's thread");
                // The work may use polylock itself.
                client.getVersionedValue(Backends.uniqueName("inside-run")).create(bytes("x"));
                return bytes("charged");
            });
            assertArrayEquals(bytes("charged"), first);
            byte[] replay = payments.run(key, fingerprint, () -> {
                runs.incrementAndGet();
                return bytes("charged twice");
            });
            assertArrayEquals(bytes("charged"), replay);
            assertEquals(1, runs.get());
            PolylockException mismatch =
                    assertThrows(PolylockException.class, () -> payments.run(key, bytes("other"), () -> bytes("no")));
            assertEquals(ErrorCode.MISMATCH, mismatch.getCode());

            // The work's own exception comes back as it is, checked or not, and the key runs again after it.
            IOException failure = new IOException("card declined");
            assertSame(failure, assertThrows(IOException.class, () -> payments.run("order-2", fingerprint, () -> {
                throw failure;
            })));
            assertArrayEquals(bytes("ok"), payments.run("order-2", fingerprint, () -> bytes("ok")));
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> payments.run("order-3", fingerprint, () -> null)).getCode());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void beginStepByStepAndATakenOverTicketIsLost(Backend backend) throws Exception {
        try (PolylockClient a = backend.connect(); PolylockClient b = backend.connect()) {
            String namespace = Backends.uniqueName("jobs");
            Idempotency slow = a.getIdempotency(namespace, Duration.ofHours(1), Duration.ofMillis(300));
            Idempotency fast = b.getIdempotency(namespace, Duration.ofHours(1), Duration.ofMillis(300));
            byte[] fingerprint = bytes("fp");

            Idempotency.Begin first = slow.begin("job", fingerprint);
            assertEquals(Idempotency.Outcome.ACQUIRED, first.getOutcome());
            IdempotencyTicket stale = first.getTicket();
            first.getTicket().extend();

            Idempotency.Begin busy = fast.begin("job", fingerprint);
            assertEquals(Idempotency.Outcome.IN_PROGRESS, busy.getOutcome());
            assertNotNull(busy.getRetryAfter());
            assertNull(busy.getTicket());
            InProgressException inProgress =
                    assertThrows(InProgressException.class, () -> fast.run("job", fingerprint, () -> bytes("no")));
            assertEquals(ErrorCode.IN_PROGRESS, inProgress.getCode());
            assertNotNull(inProgress.getRetryAfter());

            // The first attempt stalls past its in-progress TTL: the next begin takes the key over.
            Idempotency.Begin takeover = null;
            for (int i = 0; i < 100; i++) {
                takeover = fast.begin("job", fingerprint);
                if (takeover.getOutcome() == Idempotency.Outcome.ACQUIRED) {
                    break;
                }
                Thread.sleep(50);
            }
            assertEquals(Idempotency.Outcome.ACQUIRED, takeover.getOutcome());
            assertTrue(takeover.getTicket().getToken() > stale.getToken(), "the takeover's token is higher");
            PolylockException lost = assertThrows(PolylockException.class, () -> stale.complete(bytes("late")));
            assertEquals(ErrorCode.LOST, lost.getCode());
            takeover.getTicket().complete(bytes("done"));

            Idempotency.Begin replay = slow.begin("job", fingerprint);
            assertEquals(Idempotency.Outcome.REPLAY, replay.getOutcome());
            assertArrayEquals(bytes("done"), replay.getResponse());
            assertEquals(Idempotency.Outcome.MISMATCH, slow.begin("job", bytes("another")).getOutcome());

            Idempotency.Begin abandoned = slow.begin("job-2", fingerprint);
            abandoned.getTicket().abandon();
            assertEquals(Idempotency.Outcome.ACQUIRED, fast.begin("job-2", fingerprint).getOutcome(),
                    "an abandoned key runs again");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void responsesAndFingerprintsFollowTheCoresCodec(Backend backend) throws Exception {
        try (PolylockClient client = backend.connect()) {
            Idempotency orders = client.getIdempotency(Backends.uniqueName("orders"));
            byte[] fingerprint = Idempotency.fingerprintOfJson("{\"sku\": \"A-1\", \"qty\": 2}");
            assertArrayEquals(fingerprint, Idempotency.fingerprintOfJson("{\"qty\":2,\"sku\":\"A-1\"}"),
                    "key order and spacing do not change a JSON fingerprint");
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> Idempotency.fingerprintOfJson("{not json")).getCode());

            String json = "{\"order\":42}";
            assertEquals(json, orders.runJson("k-json", fingerprint, () -> json));
            assertEquals(json, orders.runJson("k-json", fingerprint, () -> "{\"order\":43}"), "replayed");
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> orders.run("k-json", fingerprint, () -> bytes("x")))
                            .getCode(), "a JSON response is not handed out as bytes");

            // A long payload as its own fingerprint: the core hashes it, so it is accepted and still tells payloads apart.
            byte[] longPayload = new byte[4096];
            assertArrayEquals(bytes("big"), orders.run("k-long", longPayload, () -> bytes("big")));
            longPayload[4000] = 1;
            assertEquals(ErrorCode.MISMATCH, assertThrows(PolylockException.class,
                    () -> orders.run("k-long", longPayload, () -> bytes("other"))).getCode());

            // begin hands back the stored bytes as they are: what run stored carries the codec's tag.
            Idempotency.Begin replay = orders.begin("k-long", new byte[4096]);
            assertEquals(Idempotency.Outcome.REPLAY, replay.getOutcome());
            assertTrue(replay.getResponse().length > 3);
        }
    }
}
