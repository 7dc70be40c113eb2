package io.polylock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.polylock.Backends.Backend;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Issue 19 through the Java API, on every backend: RIdGenerator over Leaf-style segments, leased Snowflake worker ids. */
class IdGeneratorTest {
    static Stream<Backend> backends() {
        return Backends.all().stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void segmentIdsNeverRepeatAcrossGeneratorsClientsAndThreads(Backend backend) throws Exception {
        String tag = Backends.uniqueName("ids");
        try (PolylockClient a = backend.connect(); PolylockClient b = backend.connect()) {
            RIdGenerator first = a.getIdGenerator(tag);
            RIdGenerator second = b.getIdGenerator(tag);
            assertEquals(tag, first.getName());
            assertTrue(first.tryInit(0, 50), "the first tryInit sets the allocation size");
            assertFalse(first.tryInit(0, 70), "a second one does not");
            Set<Long> seen = ConcurrentHashMap.newKeySet();
            ExecutorService pool = Executors.newFixedThreadPool(4);
            try {
                List<Future<?>> done = new ArrayList<>();
                for (RIdGenerator generator : new RIdGenerator[] {first, second, first, second}) {
                    done.add(pool.submit(() -> {
                        long previous = 0;
                        for (int i = 0; i < 300; i++) {
                            long id = generator.nextId();
                            assertTrue(id > 0, "never 0");
                            assertTrue(seen.add(id), "ID " + id + " handed out twice");
                            previous = id;
                        }
                        for (long id : generator.nextIds(100)) {
                            assertTrue(seen.add(id), "ID " + id + " handed out twice");
                        }
                        return previous;
                    }));
                }
                for (Future<?> future : done) {
                    future.get();
                }
            } finally {
                pool.shutdownNow();
            }
            assertEquals(4 * 400, seen.size());
            // Within one generator and one thread, IDs increase.
            RIdGenerator third = a.getIdGenerator(tag);
            long previous = 0;
            for (long id : third.nextIds(250)) {
                assertTrue(id > previous, id + " after " + previous);
                assertTrue(seen.add(id));
                previous = id;
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void tryInitRefusesWhatItCannotHonour(Backend backend) {
        try (PolylockClient client = backend.connect()) {
            RIdGenerator ids = client.getIdGenerator(Backends.uniqueName("init"));
            PolylockException start = assertThrows(PolylockException.class, () -> ids.tryInit(1000, 10));
            assertEquals(ErrorCode.UNSUPPORTED, start.getCode());
            assertTrue(start.getMessage().contains("start value"), start.getMessage());
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> ids.tryInit(0, 0)).getCode());
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> ids.tryInit(0, -5)).getCode());
            long first = ids.nextId();
            assertTrue(first >= 1);
            assertFalse(ids.tryInit(0, 10), "a generator that handed out IDs keeps its allocation size");
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> ids.nextIds(-1)).getCode());
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> client.getIdGenerator("").nextId()).getCode());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void leasedSnowflakesHoldDistinctWorkersAndGiveThemBack(Backend backend) {
        try (PolylockClient a = backend.connect(); PolylockClient b = backend.connect()) {
            LeasedSnowflakeIdGenerator first = a.leaseSnowflake();
            LeasedSnowflakeIdGenerator second = b.leaseSnowflake();
            Long firstWorker = first.getWorkerId();
            Long secondWorker = second.getWorkerId();
            assertNotNull(firstWorker);
            assertNotNull(secondWorker);
            assertNotEquals(firstWorker, secondWorker, "two live leases never share a worker id");
            assertNotNull(first.getEpoch());

            Set<Long> seen = new HashSet<>();
            long previous = 0;
            for (int i = 0; i < 5_000; i++) {
                long id = first.nextId();
                assertTrue(id > previous, "increasing and positive");
                assertTrue(seen.add(id));
                previous = id;
            }
            for (long id : second.nextIds(5_000)) {
                assertTrue(seen.add(id), "the two workers' IDs never meet");
                assertEquals(secondWorker.longValue(), second.parse(id)[1], "the leased worker is in the ID");
            }
            long[] parts = first.parse(previous);
            assertEquals(firstWorker.longValue(), parts[1]);
            assertTrue(Math.abs(System.currentTimeMillis() - parts[0]) < 60_000, "timestamp is Unix ms");

            // The worker id asked for is exclusive while held, and free again once given back.
            PolylockException taken =
                    assertThrows(PolylockException.class, () -> b.leaseSnowflake(firstWorker));
            assertEquals(ErrorCode.TIMEOUT, taken.getCode());
            long lastOfFirst = first.nextId();
            first.close();
            assertNull(first.getWorkerId(), "a closed generator holds no worker id");
            try (LeasedSnowflakeIdGenerator again = b.leaseSnowflake(firstWorker)) {
                assertEquals(firstWorker, again.getWorkerId());
                assertTrue(again.getEpoch() > 0);
                long next = again.nextId();
                assertTrue(next > lastOfFirst, "a new holder issues above its predecessor's mark");
            }
            second.close();
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> a.leaseSnowflake(1024)).getCode());
            assertEquals(ErrorCode.INVALID_ARGUMENT,
                    assertThrows(PolylockException.class, () -> a.leaseSnowflake(-3)).getCode());
        }
    }
}
