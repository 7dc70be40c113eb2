package io.polylock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Polylock.redlock over three private redis-servers this test starts on free ports above 30000 and kills at the
 * end: mutual exclusion, a majority keeps working with one server gone, no token, and the URL builder's refusals.
 */
@TestMethodOrder(MethodOrderer.MethodName.class)
class RedLockTest {
    private static final List<Process> SERVERS = new ArrayList<>();
    private static final List<String> ADDRESSES = new ArrayList<>();

    @BeforeAll
    static void startServers() throws Exception {
        for (int i = 0; i < 3; i++) {
            int port = freePortAbove30000();
            Process server = new ProcessBuilder("redis-server", "--port", Integer.toString(port), "--bind", "127.0.0.1",
                            "--save", "", "--appendonly", "no")
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start();
            SERVERS.add(server);
            ADDRESSES.add("127.0.0.1:" + port);
            awaitPong(port);
        }
    }

    @AfterAll
    static void killServers() throws InterruptedException {
        for (Process server : SERVERS) {
            server.destroyForcibly();
            server.waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static int freePortAbove30000() throws IOException {
        for (int attempt = 0; attempt < 100; attempt++) {
            try (ServerSocket socket = new ServerSocket()) {
                socket.bind(new InetSocketAddress("127.0.0.1", 0));
                if (socket.getLocalPort() > 30000) {
                    return socket.getLocalPort();
                }
            }
        }
        throw new IllegalStateException("no free port above 30000");
    }

    private static void awaitPong(int port) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            try (Socket socket = new Socket("127.0.0.1", port)) {
                OutputStream out = socket.getOutputStream();
                out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                InputStream in = socket.getInputStream();
                byte[] reply = new byte[7];
                int read = in.read(reply);
                if (read > 0 && new String(reply, 0, read, StandardCharsets.US_ASCII).startsWith("+PONG")) {
                    return;
                }
            } catch (IOException notYet) {
                // not listening yet
            }
            Thread.sleep(20);
        }
        throw new IllegalStateException("redis-server on port " + port + " did not start");
    }

    private static List<String> urls() {
        List<String> urls = new ArrayList<>();
        urls.add("redis://" + ADDRESSES.get(0)); // both spellings are accepted
        urls.add(ADDRESSES.get(1));
        urls.add("redis://" + ADDRESSES.get(2) + "/");
        return urls;
    }

    @Test
    void redlocksExcludeEachOtherAndHaveNoToken() throws Exception {
        String name = Backends.uniqueName("redlock");
        try (RedLock first = Polylock.redlock(urls(), name); RedLock second = Polylock.redlock(urls(), name)) {
            assertEquals(name, first.getName());
            assertNull(first.getToken(), "RedLock has no fencing token");
            assertTrue(first.tryLock(1, 10, TimeUnit.SECONDS));
            assertTrue(first.isHeldByCurrentThread());
            assertTrue(second.isLocked());
            assertFalse(second.tryLock(), "a majority holds it for the first");
            assertNull(first.getToken(), "not even while held");
            AtomicInteger inside = new AtomicInteger();
            Thread waiter = new Thread(() -> {
                second.lock(10, TimeUnit.SECONDS);
                inside.incrementAndGet();
                second.unlock();
            });
            waiter.start();
            Thread.sleep(200);
            assertEquals(0, inside.get(), "the waiter waits while the first holds it");
            first.unlock();
            waiter.join(10_000);
            assertEquals(1, inside.get(), "then gets it");
            assertThrows(IllegalMonitorStateException.class, first::unlock);
        }
    }

    @Test
    void aMultiLockOverRedlocksOfOneClientWorks() throws Exception {
        try (PolylockClient client = Polylock.connect(Polylock.redlockUrl(urls()))) {
            MultiLock both = client.getMultiLock(
                    client.getTokenLock(Backends.uniqueName("rl-a")), client.getTokenLock(Backends.uniqueName("rl-b")));
            assertTrue(both.tryLock(1, -1, TimeUnit.SECONDS));
            assertEquals(2, both.getTokens().length);
            both.unlock();
        }
    }

    @Test
    void theUrlBuilderRefusesWhatRedlockCannotUse() {
        for (List<String> bad : List.of(
                List.<String>of(),
                List.of("127.0.0.1"),
                List.of("rediss://127.0.0.1:6380"),
                List.of("redis://127.0.0.1:6379/2"),
                List.of("redis://:secret-one@a:1", "redis://:secret-two@b:2"))) {
            PolylockException refused = assertThrows(PolylockException.class, () -> Polylock.redlockUrl(bad));
            assertEquals(ErrorCode.INVALID_ARGUMENT, refused.getCode(), bad.toString());
            assertFalse(refused.getMessage().contains("secret"), refused.getMessage());
        }
        assertEquals("redlock://:pw@a:1,b:2", Polylock.redlockUrl(List.of("redis://:pw@a:1", "redis://:pw@b:2")));
        assertThrows(NullPointerException.class, () -> Polylock.redlockUrl(null));
    }

    /** Last: it kills one of the three servers. A majority (2 of 3) still grants; RedLock's vote is per server. */
    @Test
    void zzAMajorityKeepsWorkingWithOneServerGone() throws Exception {
        String name = Backends.uniqueName("redlock-majority");
        try (RedLock lock = Polylock.redlock(urls(), name)) {
            SERVERS.get(2).destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            assertTrue(lock.tryLock(2, 10, TimeUnit.SECONDS), "2 of 3 servers are a majority");
            lock.unlock();
        }
    }
}
