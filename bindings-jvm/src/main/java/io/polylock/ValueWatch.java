package io.polylock;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * A watch on a {@link VersionedValue} ({@link VersionedValue#watch()}): each wait returns the value's next state
 * after the one it saw last, woken by the store where it can notify (etcd watches, ZooKeeper data watches, Redis
 * pub/sub, PostgreSQL {@code LISTEN}) and polling elsewhere. Where several writes land close together a wait may see
 * only the last of them; it never misses that the value changed. Thread safe: any thread may wait (one wait at a
 * time; the others queue behind it), read {@link #current()} while a wait runs, or {@link #close()} the watch, which
 * ends a wait in progress.
 *
 * <p>Waits are {@code long} + {@link TimeUnit}, as {@link RLock#tryLock(long, long, TimeUnit)}'s: {@code -1} waits as
 * long as nothing changes, {@code 0} looks once, any other negative is {@link ErrorCode#INVALID_ARGUMENT}. A wait that
 * runs out loses nothing: a change that comes while nobody waits is the next wait's answer.
 *
 * <pre>{@code
 * try (ValueWatch watch = client.getVersionedValue("config").watch()) {
 *     ValueChange change = watch.changed(30, TimeUnit.SECONDS);
 *     switch (change.getKind()) {
 *         case UPDATED: apply(change.getValue()); break;
 *         case DELETED: useDefaults(); break;
 *         default: break; // NO_CHANGE within 30 s, or CLOSED by another thread
 *     }
 * }
 * }</pre>
 */
public final class ValueWatch implements AutoCloseable {
    private static final Cleaner CLEANER = Cleaner.create();
    private static final long FOREVER = -1;

    private final PolylockClient client;
    private final String name;
    private final long watch;

    ValueWatch(PolylockClient client, String name) {
        this.client = client;
        this.name = name;
        long started = client.withHandle(h -> nativeStart(h, name));
        this.watch = started;
        // Frees the native watch once this object is unreachable (its waits keep what they need).
        CLEANER.register(this, () -> nativeFree(started));
    }

    private static native long nativeStart(long client, String name);

    private static native Versioned nativeCurrent(long watch);

    private static native long nativeChanged(long client, long watch, long waitMs, CompletableFuture<Object> future);

    private static native void nativeClose(long client, long watch);

    private static native boolean nativeIsClosed(long watch);

    private static native void nativeFree(long watch);

    /** The watched value's name. */
    public String getName() {
        return name;
    }

    /** The state seen last: the value when the watch started, or the last change a wait returned; null if none. */
    public Versioned current() {
        try {
            return nativeCurrent(watch);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Wait as long as nothing changes for the value's next state (or the watch closing). */
    public ValueChange changed() throws InterruptedException {
        return changed(FOREVER, TimeUnit.MILLISECONDS);
    }

    /**
     * Wait at most {@code wait} for the value's next state: {@link ValueChange.Kind#UPDATED} or {@link
     * ValueChange.Kind#DELETED}, {@link ValueChange.Kind#NO_CHANGE} when the wait ran out, {@link
     * ValueChange.Kind#CLOSED} once the watch is closed. An interrupt ends the wait (losing nothing) and throws
     * InterruptedException; {@link ErrorCode#CONNECTION} if the client closes meanwhile.
     */
    public ValueChange changed(long wait, TimeUnit unit) throws InterruptedException {
        CompletableFuture<ValueChange> next = changedAsync(wait, unit);
        try {
            return next.get();
        } catch (InterruptedException interrupted) {
            next.cancel(false);
            throw interrupted;
        } catch (ExecutionException e) {
            throw NativeLock.rethrow(e.getCause());
        }
    }

    /**
     * {@link #changed(long, TimeUnit)} as a future, completed on polylock's worker threads. Cancelling it ends the
     * wait, losing nothing.
     */
    public CompletableFuture<ValueChange> changedAsync(long wait, TimeUnit unit) {
        long waitMs = NativeLock.waitMillis(wait, unit);
        CompletableFuture<Object> answer = new CompletableFuture<>();
        long call;
        try {
            call = client.withHandle(h -> nativeChanged(h, watch, waitMs, answer));
        } finally {
            Reference.reachabilityFence(this);
        }
        answer.whenComplete((value, error) -> {
            if (answer.isCancelled()) {
                NativeBridge.cancel(call);
            }
            NativeBridge.freeCall(call);
        });
        return NativeLock.derive(answer, ValueChange::fromNative);
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        try {
            return nativeIsClosed(watch);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * End the watch, from any thread: a wait in progress returns {@link ValueChange.Kind#CLOSED}, as every later one
     * does, and the store's change feed is let go of. Twice is harmless; so is closing after the client closed.
     */
    @Override
    public void close() {
        try {
            client.withHandle(h -> {
                nativeClose(h, watch);
                return null;
            });
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public String toString() {
        return "ValueWatch{name=" + name + (isClosed() ? ", closed}" : "}");
    }
}
