package io.polylock;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Read-write locks and permit-expirable semaphores with Redisson's names, on every backend (the embedded ones and
 * each server of tests/services, in its incumbent's layout). Also: the lease kind, and the error codes against the
 * core's table.
 */
class RwLockAndSemaphoreTest {
    /** Run on another thread (another owner) and return its result. */
    private static <T> T onOtherThread(java.util.concurrent.Callable<T> call) throws Exception {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return call.call();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }).get(30, TimeUnit.SECONDS);
    }

    @Test
    void readersShareWritersExcludeDowngradeWorksUpgradeIsRefused() throws Exception {
        for (Backends.Backend backend : Backends.all()) {
            try (PolylockClient client = backend.connect()) {
                String name = Backends.uniqueName("rw");
                RReadWriteLock rw = client.getReadWriteLock(name);
                assertEquals(name, rw.getName());
                rw.readLock().lock();
                assertTrue(onOtherThread(() -> {
                    boolean read = rw.readLock().tryLock(1, -1, TimeUnit.SECONDS);
                    rw.readLock().unlock();
                    return read;
                }), backend.label);
                assertFalse(onOtherThread(() -> rw.writeLock().tryLock(50, -1, TimeUnit.MILLISECONDS)), backend.label);
                // A reader asking for the write lock is refused at once: an upgrade could deadlock.
                long started = System.nanoTime();
                PolylockException upgrade = assertThrows(
                        PolylockException.class, () -> rw.writeLock().tryLock(5, -1, TimeUnit.SECONDS), backend.label);
                assertEquals(ErrorCode.INVALID_ARGUMENT, upgrade.getCode());
                assertTrue(System.nanoTime() - started < TimeUnit.SECONDS.toNanos(1));
                rw.readLock().unlock();
                assertThrows(IllegalMonitorStateException.class, () -> rw.readLock().unlock());
                // The writer may also read, then let go of the write lock (a downgrade).
                rw.writeLock().lock();
                assertTrue(rw.writeLock().isHeldByCurrentThread());
                rw.readLock().lock();
                rw.writeLock().unlock();
                assertTrue(onOtherThread(() -> {
                    boolean read = rw.readLock().tryLock(1, -1, TimeUnit.SECONDS);
                    rw.readLock().unlock();
                    return read;
                }));
                rw.readLock().unlock();
            }
        }
    }

    @Test
    void theWaitingFormsOfASideAndAPermitThrowTimeout() throws Exception {
        for (Backends.Backend backend : Backends.all()) {
            try (PolylockClient client = backend.connect()) {
                String name = Backends.uniqueName("within");
                RReadWriteLock rw = client.getReadWriteLock(name);
                rw.writeLock().lockWithin(5, -1, TimeUnit.SECONDS);
                Exception read = assertThrows(Exception.class, () -> onOtherThread(() -> {
                    rw.readLock().lockWithin(200, -1, TimeUnit.MILLISECONDS);
                    return null;
                }));
                assertEquals(ErrorCode.TIMEOUT, polylockCause(read).getCode(), backend.label);
                rw.writeLock().unlock();
                assertNull(onOtherThread(() -> {
                    rw.readLock().lockWithin(5, -1, TimeUnit.SECONDS);
                    rw.readLock().unlock();
                    return null;
                }));

                RPermitExpirableSemaphore semaphore = client.getPermitExpirableSemaphore(name + ":s");
                assertTrue(semaphore.trySetPermits(1));
                String permit = semaphore.acquireWithin(5, -1, TimeUnit.SECONDS);
                assertNotNull(permit);
                long started = System.nanoTime();
                PolylockException timedOut = assertThrows(PolylockException.class,
                        () -> semaphore.acquireWithin(200, -1, TimeUnit.MILLISECONDS));
                assertEquals(ErrorCode.TIMEOUT, timedOut.getCode(), backend.label);
                assertTrue(System.nanoTime() - started >= TimeUnit.MILLISECONDS.toNanos(150), "it waited");
                assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(PolylockException.class,
                        () -> semaphore.acquireWithin(-5, -1, TimeUnit.MILLISECONDS)).getCode());
                semaphore.release(permit);
                String next = semaphore.acquireWithin(5, 30, TimeUnit.SECONDS);
                assertNull(semaphore.tryAcquire(), "the waiting form's permit is held");
                semaphore.release(next);
            }
        }
    }

    @Test
    void permitsCarryIncreasingFencingTokens() throws Exception {
        for (Backends.Backend backend : Backends.all()) {
            try (PolylockClient client = backend.connect()) {
                RPermitExpirableSemaphore semaphore = client.getPermitExpirableSemaphore(Backends.uniqueName("tokens"));
                semaphore.trySetPermits(2);
                Permit first = semaphore.acquirePermit();
                Permit second = semaphore.tryAcquirePermit(5, -1, TimeUnit.SECONDS);
                assertNotNull(second, backend.label);
                assertNotEquals(first.getId(), second.getId());
                assertTrue(second.getToken() > first.getToken(), first + " then " + second);
                assertNull(semaphore.tryAcquirePermit(), "both permits are taken");
                assertNull(semaphore.tryAcquirePermit(50, -1, TimeUnit.MILLISECONDS));
                assertEquals(ErrorCode.TIMEOUT, assertThrows(PolylockException.class,
                        () -> semaphore.acquirePermitWithin(100, -1, TimeUnit.MILLISECONDS)).getCode());
                semaphore.release(first);
                assertThrows(IllegalMonitorStateException.class, () -> semaphore.release(first.getId()),
                        "a Permit and its id name the same permit");
                Permit third = semaphore.acquirePermitWithin(5, 30, TimeUnit.SECONDS);
                assertTrue(third.getToken() > second.getToken());
                semaphore.release(third.getId()); // the Redisson-style release by id
                String id = semaphore.tryAcquire(); // the Redisson-style forms still hand out ids
                assertNotNull(id);
                Permit fourth = semaphore.tryAcquirePermit();
                assertNull(fourth, "the id form's permit is held");
                semaphore.release(id);
                Permit leased = semaphore.acquirePermit(30, TimeUnit.SECONDS);
                assertTrue(leased.getToken() > third.getToken());
                assertEquals(leased, new Permit(leased.getId(), leased.getToken()));
                semaphore.release(leased);
                semaphore.release(second);
                assertThrows(NullPointerException.class, () -> semaphore.release((Permit) null));
            }
        }
    }

    /** The PolylockException an {@link #onOtherThread} call ended with. */
    private static PolylockException polylockCause(Throwable thrown) {
        Throwable cause = thrown;
        while (cause != null && !(cause instanceof PolylockException)) {
            cause = cause.getCause();
        }
        if (cause == null) {
            throw new AssertionError("no PolylockException in " + thrown, thrown);
        }
        return (PolylockException) cause;
    }

    @Test
    void permitsAreOwnedCountedExpiringAndReleasedById() throws Exception {
        for (Backends.Backend backend : Backends.all()) {
            try (PolylockClient client = backend.connect()) {
                String name = Backends.uniqueName("sem");
                RPermitExpirableSemaphore semaphore = client.getPermitExpirableSemaphore(name);
                assertThrows(IllegalStateException.class, semaphore::tryAcquire, "no count yet");
                assertTrue(semaphore.trySetPermits(2));
                assertFalse(semaphore.trySetPermits(3), "the count is set already");
                String first = semaphore.acquire();
                String second = semaphore.tryAcquire(1, -1, TimeUnit.SECONDS);
                assertNotNull(second);
                assertNotEquals(first, second);
                assertNull(semaphore.tryAcquire());
                // Another thread may release a permit by its id; a second release is not the owner's.
                onOtherThread(() -> {
                    semaphore.release(first);
                    return null;
                });
                assertThrows(IllegalMonitorStateException.class, () -> semaphore.release(first));
                // A permit whose lease runs out comes back.
                String shortLived = semaphore.acquire(150, TimeUnit.MILLISECONDS);
                String later = semaphore.tryAcquire(5, -1, TimeUnit.SECONDS);
                assertNotNull(later, backend.label);
                PolylockException lost = assertThrows(PolylockException.class, () -> semaphore.release(shortLived));
                assertEquals(ErrorCode.LOST, lost.getCode());
                semaphore.release(later);
                semaphore.release(second);
                // Another count for the same name is refused by the store.
                RPermitExpirableSemaphore other = client.getPermitExpirableSemaphore(name);
                other.trySetPermits(5);
                assertEquals(ErrorCode.INVALID_ARGUMENT,
                        assertThrows(PolylockException.class, other::tryAcquire).getCode());
                assertEquals(ErrorCode.INVALID_ARGUMENT,
                        assertThrows(PolylockException.class, () -> semaphore.release("not-hex")).getCode());
            }
        }
    }

    @Test
    void theLeaseKindIsReachedFromJavaLikeEveryOtherKind() throws Exception {
        for (Backends.Backend backend : Backends.all()) {
            try (PolylockClient client = backend.connect()) {
                String name = Backends.uniqueName("lease");
                if (!backend.isSqlSession()) {
                    PolylockException refused =
                            assertThrows(PolylockException.class, () -> client.getLeaseLock(name), backend.label);
                    assertEquals(ErrorCode.UNSUPPORTED, refused.getCode(), backend.label);
                    continue;
                }
                RFencedLock lock = client.getLeaseLock(name);
                Long first = lock.tryLockAndGetToken(0, 10, TimeUnit.SECONDS);
                assertNotNull(first, backend.label);
                assertEquals(first, lock.getToken());
                assertFalse(onOtherThread(() -> lock.tryLock(50, -1, TimeUnit.MILLISECONDS)));
                assertTrue(lock.isLocked());
                lock.unlock();
                assertFalse(lock.isLocked());
                assertTrue(lock.tryLockAndGetToken(0, 10, TimeUnit.SECONDS) > first, "the next hold's token is greater");
                lock.unlock();
            }
        }
    }

    @Test
    void errorCodesAreTheCoreTableInItsOrder() {
        String[] core = NativeBridge.errorKinds();
        String[] java = Arrays.stream(ErrorCode.values()).map(Enum::name).toArray(String[]::new);
        assertArrayEquals(core, java);
        for (ErrorCode code : ErrorCode.values()) {
            assertEquals(code.ordinal() + 1, code.code(), code.name());
            assertEquals(code, ErrorCode.fromNative(code.code()));
        }
    }
}
