package io.polylock;

import java.util.concurrent.CompletableFuture;

/**
 * An observation of an election ({@link RLeaderElection#observe}): a daemon thread of its own reads each change and
 * calls the listener. {@link #close()} stops it; it also ends when the client closes or the store fails it.
 */
public final class LeaderSubscription implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("io.polylock");

    private final long observer;
    private final RLeaderElection.LeaderListener listener;
    private final Thread thread;
    private final CompletableFuture<Void> ended = new CompletableFuture<>();
    private boolean freed; // guarded by this: the native observation is gone

    private LeaderSubscription(String name, long observer, RLeaderElection.LeaderListener listener) {
        this.observer = observer;
        this.listener = listener;
        this.thread = new Thread(this::run, "polylock-observe-" + name);
        this.thread.setDaemon(true);
    }

    static LeaderSubscription start(String name, long observer, RLeaderElection.LeaderListener listener) {
        LeaderSubscription subscription = new LeaderSubscription(name, observer, listener);
        subscription.thread.start();
        return subscription;
    }

    private void run() {
        try {
            while (true) {
                Leader next = NativeLeaderElection.nativeNext(observer);
                if (next == null) {
                    return;
                }
                try {
                    listener.leaderChanged(Leader.orEmpty(next));
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "a leader listener threw; the observation goes on", e);
                }
            }
        } catch (RuntimeException failed) {
            listener.observationFailed(failed);
        } finally {
            synchronized (this) {
                freed = true;
                NativeLeaderElection.nativeFreeObserver(observer);
            }
            ended.complete(null);
        }
    }

    /** Completes once the observation ended (closed, the client closed, or the store failed it). */
    public CompletableFuture<Void> ended() {
        return ended;
    }

    public boolean isClosed() {
        return ended.isDone();
    }

    /** Stop observing and wait for the listener's current call, if any, to return (not when called from it). */
    @Override
    public void close() {
        synchronized (this) {
            if (!freed) {
                NativeLeaderElection.nativeStopObserving(observer);
            }
        }
        if (Thread.currentThread() != thread) {
            ended.join();
        }
    }
}
