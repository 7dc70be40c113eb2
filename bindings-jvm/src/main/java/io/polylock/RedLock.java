package io.polylock;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;

/**
 * A RedLock ({@link Polylock#redlock(java.util.List, String)}): one lock over N independent Redis servers, held while
 * a majority granted it and validity is left (lease - elapsed - drift, drift = 1 % of the lease + 2 ms), each server
 * in the token layout node-redlock and redsync use, so they and polylock exclude each other on the same resource.
 * Every failed attempt is released on every server before a retry. Not reentrant in the store (a token lock);
 * re-entry by the same thread is counted by this client.
 *
 * <p>RedLock has <b>no fencing token</b>: a majority of independent counters is no counter that only grows, so
 * {@link #getToken()} always returns null and this type is no {@link RFencedLock}. Where a paused holder must not
 * write after its lease ended, use a single Redis, etcd or ZooKeeper lock with {@link RFencedLock} and {@link
 * VersionedValue#writeFenced}.
 *
 * <p>This lock owns its connection: {@link #close()} gives back what it holds and closes it.
 */
public final class RedLock implements RLock, AutoCloseable {
    private final PolylockClient client;
    private final RLock lock;

    RedLock(PolylockClient client, String name) {
        this.client = client;
        RLock made;
        try {
            made = client.getTokenLock(name);
        } catch (RuntimeException e) {
            client.close();
            throw e;
        }
        this.lock = made;
    }

    /** Always null: RedLock issues no fencing tokens (see the class comment). */
    public Long getToken() {
        return null;
    }

    /** The client this lock runs on (its {@code redlock://} connection). */
    public PolylockClient getClient() {
        return client;
    }

    @Override
    public void close() {
        client.close();
    }

    @Override
    public String getName() {
        return lock.getName();
    }

    @Override
    public void lock() {
        lock.lock();
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        lock.lockInterruptibly();
    }

    @Override
    public boolean tryLock() {
        return lock.tryLock();
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        return lock.tryLock(time, unit);
    }

    @Override
    public void unlock() {
        lock.unlock();
    }

    @Override
    public void lockWithin(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        lock.lockWithin(waitTime, leaseTime, unit);
    }

    @Override
    public Condition newCondition() {
        return lock.newCondition();
    }

    @Override
    public void lock(long leaseTime, TimeUnit unit) {
        lock.lock(leaseTime, unit);
    }

    @Override
    public void lockInterruptibly(long leaseTime, TimeUnit unit) throws InterruptedException {
        lock.lockInterruptibly(leaseTime, unit);
    }

    @Override
    public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        return lock.tryLock(waitTime, leaseTime, unit);
    }

    @Override
    public boolean forceUnlock() {
        return lock.forceUnlock();
    }

    @Override
    public boolean isLocked() {
        return lock.isLocked();
    }

    @Override
    public boolean isHeldByCurrentThread() {
        return lock.isHeldByCurrentThread();
    }

    @Override
    public boolean isHeldByThread(long threadId) {
        return lock.isHeldByThread(threadId);
    }

    @Override
    public int getHoldCount() {
        return lock.getHoldCount();
    }

    @Override
    public long remainTimeToLive() {
        return lock.remainTimeToLive();
    }

    @Override
    public CompletableFuture<Void> lockAsync() {
        return lock.lockAsync();
    }

    @Override
    public CompletableFuture<Void> lockAsync(long threadId) {
        return lock.lockAsync(threadId);
    }

    @Override
    public CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit) {
        return lock.lockAsync(leaseTime, unit);
    }

    @Override
    public CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit, long threadId) {
        return lock.lockAsync(leaseTime, unit, threadId);
    }

    @Override
    public CompletableFuture<Boolean> tryLockAsync() {
        return lock.tryLockAsync();
    }

    @Override
    public CompletableFuture<Boolean> tryLockAsync(long threadId) {
        return lock.tryLockAsync(threadId);
    }

    @Override
    public CompletableFuture<Boolean> tryLockAsync(long waitTime, TimeUnit unit) {
        return lock.tryLockAsync(waitTime, unit);
    }

    @Override
    public CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit) {
        return lock.tryLockAsync(waitTime, leaseTime, unit);
    }

    @Override
    public CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit, long threadId) {
        return lock.tryLockAsync(waitTime, leaseTime, unit, threadId);
    }

    @Override
    public CompletableFuture<Void> unlockAsync() {
        return lock.unlockAsync();
    }

    @Override
    public CompletableFuture<Void> unlockAsync(long threadId) {
        return lock.unlockAsync(threadId);
    }

    @Override
    public CompletableFuture<Boolean> forceUnlockAsync() {
        return lock.forceUnlockAsync();
    }

    @Override
    public CompletableFuture<Boolean> isLockedAsync() {
        return lock.isLockedAsync();
    }

    @Override
    public CompletableFuture<Long> remainTimeToLiveAsync() {
        return lock.remainTimeToLiveAsync();
    }

    @Override
    public String toString() {
        return "RedLock{name=" + lock.getName() + ", client=" + client.getId() + "}";
    }

    @Override
    public boolean isLost() {
        return lock.isLost();
    }

    @Override
    public String getLostReason() {
        return lock.getLostReason();
    }

    @Override
    public CompletableFuture<String> onLost() {
        return lock.onLost();
    }

    @Override
    public CompletableFuture<String> onLost(long threadId) {
        return lock.onLost(threadId);
    }
}
