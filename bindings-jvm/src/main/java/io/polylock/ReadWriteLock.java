package io.polylock;

/** The two sides of a read-write lock, each a {@link NativeLock} of its own kind. */
final class ReadWriteLock implements RReadWriteLock {
    private final RLock read;
    private final RLock write;

    ReadWriteLock(RLock read, RLock write) {
        this.read = read;
        this.write = write;
    }

    @Override
    public RLock readLock() {
        return read;
    }

    @Override
    public RLock writeLock() {
        return write;
    }

    @Override
    public String getName() {
        return read.getName();
    }
}
