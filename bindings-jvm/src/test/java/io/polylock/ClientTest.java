package io.polylock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Connecting, closing, configuration and IDs. */
class ClientTest {
    private static String sqliteUrl() throws Exception {
        Path dir = Files.createTempDirectory("polylock-jvm-client");
        dir.toFile().deleteOnExit();
        return "sqlite://" + dir.resolve("locks.db");
    }

    @Test
    void badUrlsGetTypedErrorsWithoutTheirPasswords() {
        PolylockException unknown = assertThrows(PolylockException.class, () -> Polylock.connect("nosuch://x"));
        assertEquals(ErrorCode.INVALID_ARGUMENT, unknown.getCode());
        assertTrue(unknown.getMessage().contains("unknown URL scheme"), unknown.getMessage());

        PolylockException unreachable =
                assertThrows(PolylockException.class, () -> Polylock.connect("redis://:hunter2secret@127.0.0.1:1"));
        assertEquals(ErrorCode.CONNECTION, unreachable.getCode());
        assertFalse(unreachable.getMessage().contains("hunter2secret"), unreachable.getMessage());

        assertEquals(ErrorCode.INVALID_ARGUMENT,
                assertThrows(PolylockException.class, () -> Polylock.connect("mem://x?lease=banana")).getCode());
        assertThrows(NullPointerException.class, () -> Polylock.connect(null));
    }

    @Test
    void closingReleasesHoldsAndLaterCallsSayClosed() throws Exception {
        String url = sqliteUrl();
        PolylockClient client = Polylock.connect(url);
        RLock lock = client.getLock("closing");
        lock.lock();
        CompletableFuture<Void> pending = client.getLock("closing").lockAsync(42L);
        client.close();
        client.close(); // harmless twice
        assertTrue(client.isShutdown());

        ExecutionException closedWhileWaiting =
                assertThrows(ExecutionException.class, () -> pending.get(10, TimeUnit.SECONDS));
        assertEquals(ErrorCode.CONNECTION, ((PolylockException) closedWhileWaiting.getCause()).getCode());
        assertEquals(ErrorCode.CONNECTION, assertThrows(PolylockException.class, lock::tryLock).getCode());
        assertEquals(ErrorCode.CONNECTION,
                assertThrows(PolylockException.class, () -> client.getLock("other")).getCode());

        try (PolylockClient other = Polylock.connect(url)) {
            RLock theirs = other.getLock("closing");
            assertTrue(theirs.tryLock(), "close gave the lock back");
            theirs.unlock();
        }
    }

    @Test
    void configSetsTheNamespaceAndTheWatchdogLease() throws Exception {
        String url = sqliteUrl();
        Config config = new Config().setUrl(url).setNamespace("orders").setLockWatchdogTimeout(3_000);
        try (PolylockClient configured = Polylock.create(config); PolylockClient plain = Polylock.connect(url)) {
            RLock lock = configured.getLock("42");
            lock.lock();
            long ttl = lock.remainTimeToLive();
            assertTrue(ttl > 0 && ttl <= 3_000, "watchdog lease from the config: " + ttl);
            assertTrue(plain.getLock("orders:42").isLocked(), "the namespace prefixes the key");
            assertFalse(plain.getLock("42").isLocked());
            lock.unlock();
        }
        assertThrows(PolylockException.class, () -> new Config().setLockWatchdogTimeout(0));
    }

    @Test
    void ownersAreTheClientIdAndTheThreadId() {
        try (PolylockClient a = Polylock.connect("mem://owners-" + ProcessHandle.current().pid());
                PolylockClient b = Polylock.connect("mem://owners-" + ProcessHandle.current().pid())) {
            assertTrue(a.getId().matches("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}"), a.getId());
            assertFalse(a.getId().equals(b.getId()));
        }
    }

    @Test
    void aRustPanicBecomesAnExceptionAndTheJvmCarriesOn() throws Exception {
        try (PolylockClient client = Polylock.connect("mem://panics")) {
            PolylockException direct = assertThrows(PolylockException.class, () -> client.selfTestPanic(false));
            assertEquals(ErrorCode.INTERNAL, direct.getCode());
            assertTrue(direct.getMessage().contains("self-test panic at a JNI entry point"), direct.getMessage());

            ExecutionException inTask = assertThrows(ExecutionException.class,
                    () -> client.selfTestPanic(true).get(10, TimeUnit.SECONDS));
            assertEquals(ErrorCode.INTERNAL, ((PolylockException) inTask.getCause()).getCode());

            RLock lock = client.getLock("after-the-panics");
            assertTrue(lock.tryLock(), "the client still works");
            lock.unlock();
        }
    }

    @Test
    void snowflakeIdsIncreaseAndCheckTheWorkerId() {
        try (PolylockClient client = Polylock.connect("mem://ids")) {
            SnowflakeIdGenerator ids = client.getIdGenerator(7);
            long previous = 0;
            Set<Long> seen = new HashSet<>();
            for (int i = 0; i < 10_000; i++) {
                long id = ids.nextId();
                assertTrue(id > previous, "ids increase and stay positive");
                assertTrue(seen.add(id));
                previous = id;
            }
            long[] parts = ids.parse(previous);
            assertEquals(7, parts[1], "worker");
            assertTrue(Math.abs(System.currentTimeMillis() - parts[0]) < 60_000, "timestamp is Unix ms");
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> client.getIdGenerator(1024)).getCode());
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> client.getIdGenerator(-1)).getCode());
            long epoch = System.currentTimeMillis() - 1000;
            long small = client.getIdGenerator(1, epoch).nextId();
            assertTrue(small < previous, "a recent epoch gives smaller ids");
        }
    }
}
