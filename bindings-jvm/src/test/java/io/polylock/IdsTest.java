package io.polylock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** UUIDv7 and ULID from the core, against java.util.UUID and the vectors every binding shares. */
class IdsTest {
    // The same vectors as polylock-id's own tests (id/src/uuid7.rs, id/src/ulid.rs).
    static final String ULID_VECTOR = "01ARYZ6S4104HMASW9NF6YY093";
    static final String ULID_VECTOR_AS_UUID = "01563df3-6481-0123-4567-89abcdef0123";
    static final String UUID7_VECTOR = "01895f4c-4d2a-7aaa-aaaa-aaaa12345678";

    @Test
    void uuid7IsVersion7OfNowAndIncreasing() {
        UUID first = Ids.uuid7();
        assertEquals(7, first.version());
        assertEquals(2, first.variant());
        assertTrue(Math.abs(Ids.uuid7TimestampMillis(first) - System.currentTimeMillis()) < 5_000);
        assertEquals(0x01895f4c4d2aL, Ids.uuid7TimestampMillis(UUID.fromString(UUID7_VECTOR)));
        String previous = first.toString();
        for (int i = 0; i < 50_000; i++) {
            String next = Ids.uuid7().toString();
            assertTrue(next.compareTo(previous) > 0, previous + " then " + next);
            previous = next;
        }
    }

    @Test
    void ulidsIncreaseAndConvert() {
        String previous = "";
        for (int i = 0; i < 50_000; i++) {
            String next = Ids.ulid();
            assertEquals(26, next.length());
            assertTrue(next.compareTo(previous) > 0, previous + " then " + next);
            previous = next;
        }
        assertTrue(Math.abs(Ids.ulidTimestampMillis(previous) - System.currentTimeMillis()) < 5_000);
        assertEquals(ULID_VECTOR_AS_UUID, Ids.ulidToUuid(ULID_VECTOR).toString());
        assertEquals(ULID_VECTOR, Ids.uuidToUlid(UUID.fromString(ULID_VECTOR_AS_UUID)));
        assertEquals(1_469_918_176_385L, Ids.ulidTimestampMillis(ULID_VECTOR.toLowerCase()));
        UUID stamp = Ids.uuid7();
        assertEquals(Ids.uuid7TimestampMillis(stamp), Ids.ulidTimestampMillis(Ids.uuidToUlid(stamp)));
    }

    @Test
    void threadsNeverGetTheSameId() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            Set<String> seen = ConcurrentHashMap.newKeySet();
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                done.add(pool.submit(() -> {
                    for (int i = 0; i < 10_000; i++) {
                        assertTrue(seen.add(Ids.uuid7().toString()));
                        assertTrue(seen.add(Ids.ulid()));
                    }
                }));
            }
            for (Future<?> future : done) {
                future.get();
            }
            assertEquals(80_000, seen.size());
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void badInputIsInvalidArgument() {
        for (String bad : new String[] {"", "short", "8ZZZZZZZZZZZZZZZZZZZZZZZZZ", "01ARYZ6S4104HMASW9NF6YY09U"}) {
            PolylockException refused = assertThrows(PolylockException.class, () -> Ids.ulidToUuid(bad));
            assertEquals(ErrorCode.INVALID_ARGUMENT, refused.getCode(), bad);
        }
        PolylockException v4 = assertThrows(PolylockException.class, () -> Ids.uuid7TimestampMillis(UUID.randomUUID()));
        assertEquals(ErrorCode.INVALID_ARGUMENT, v4.getCode());
        assertThrows(NullPointerException.class, () -> Ids.ulidToUuid(null));
    }
}
