package io.polylock;

/** Redisson's RReadWriteLock: two locks over one name, a shared {@link #readLock()} and an exclusive {@link #writeLock()}. */
public interface RReadWriteLock {
    /** The shared side: any number of threads (and processes) at once while nobody writes. */
    RLock readLock();

    /** The exclusive side: one thread, and no readers. */
    RLock writeLock();

    String getName();
}
