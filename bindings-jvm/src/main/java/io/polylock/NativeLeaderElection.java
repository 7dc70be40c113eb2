package io.polylock;

import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * {@link RLeaderElection} over the core's election: translation only. Its natives (bindings-jvm/src/election.rs) also
 * serve {@link NativeLeadership} and {@link LeaderSubscription}.
 */
final class NativeLeaderElection implements RLeaderElection {
    private static final long FOREVER = -1; // NativeLock's convention for waits

    private final PolylockClient client;
    private final String name;

    NativeLeaderElection(PolylockClient client, String name) {
        this.client = client;
        this.name = Objects.requireNonNull(name, "name");
        client.withHandle(h -> {
            nativeCheck(h, name);
            return null;
        });
    }

    // ---- the natives, as bindings-jvm/src/election.rs has them

    private static native void nativeCheck(long client, String name);

    private static native long nativeCampaign(long client, String name, byte[] value, long waitMs, boolean waiting,
            CompletableFuture<Long> future);

    private static native Leader nativeLeader(long client, String name);

    private static native long nativeObserve(long client, String name);

    static native Leader nativeNext(long observer);

    static native void nativeStopObserving(long observer);

    static native void nativeFreeObserver(long observer);

    // nativeState's `which`
    static final int STATE_TERM = 0;
    static final int STATE_LEADING = 1;
    static final int STATE_LOST = 2;
    static final int STATE_SUSPENDED = 3;

    static native long nativeState(long leadership, int which);

    static native byte[] nativeValue(long leadership);

    static native String nativeLostReason(long leadership);

    static native void nativeProclaim(long client, long leadership, byte[] value);

    static native void nativeResign(long client, long leadership);

    static native void nativeWatchLost(long client, long leadership, CompletableFuture<Long> future);

    static native void nativeFreeLeadership(long leadership);

    // ---- RLeaderElection

    @Override
    public String getName() {
        return name;
    }

    @Override
    public RLeadership campaign(byte[] value) throws InterruptedException {
        return campaignFor(value, FOREVER, true);
    }

    @Override
    public RLeadership campaign(String value) throws InterruptedException {
        return campaignFor(utf8(value), FOREVER, true);
    }

    @Override
    public RLeadership campaign(byte[] value, long time, TimeUnit unit) throws InterruptedException {
        return campaignFor(value, waitMillis(time, unit), true);
    }

    @Override
    public RLeadership campaign(String value, long time, TimeUnit unit) throws InterruptedException {
        return campaignFor(utf8(value), waitMillis(time, unit), true);
    }

    @Override
    public RLeadership tryCampaign(byte[] value, long time, TimeUnit unit) throws InterruptedException {
        return campaignFor(value, NativeLock.waitMillis(time, Objects.requireNonNull(unit, "unit")), false);
    }

    @Override
    public RLeadership tryCampaign(String value, long time, TimeUnit unit) throws InterruptedException {
        return tryCampaign(utf8(value), time, unit);
    }

    private static long waitMillis(long time, TimeUnit unit) {
        return NativeLock.waitMillis(time, Objects.requireNonNull(unit, "unit"));
    }

    private static byte[] utf8(String value) {
        return Objects.requireNonNull(value, "value").getBytes(StandardCharsets.UTF_8);
    }

    /**
     * The leadership won within {@code waitMs}; when the wait ran out, the core's TIMEOUT ({@code waiting}) or null
     * (the try form).
     */
    private RLeadership campaignFor(byte[] value, long waitMs, boolean waiting) throws InterruptedException {
        Objects.requireNonNull(value, "value");
        CompletableFuture<Long> future = new CompletableFuture<>();
        long call = client.withHandle(h -> nativeCampaign(h, name, value, waitMs, waiting, future));
        future.whenComplete((won, error) -> {
            if (future.isCancelled()) {
                NativeBridge.cancel(call); // withdraws the candidacy
            }
            NativeBridge.freeCall(call);
        });
        Long won;
        try {
            won = future.get();
        } catch (InterruptedException interrupted) {
            if (!future.cancel(false) && !future.isCompletedExceptionally()) {
                // Elected just before the interrupt: freeing the leadership resigns it.
                Long late = future.getNow(null);
                if (late != null) {
                    nativeFreeLeadership(late);
                }
            }
            throw interrupted;
        } catch (ExecutionException e) {
            throw NativeLock.rethrow(e.getCause());
        }
        return won == null ? null : new NativeLeadership(client, name, won);
    }

    @Override
    public Optional<byte[]> getLeader() {
        return getLeaderInfo().map(Leader::getValue);
    }

    @Override
    public Optional<Leader> getLeaderInfo() {
        return Leader.orEmpty(client.withHandle(h -> nativeLeader(h, name)));
    }

    @Override
    public LeaderSubscription observe(LeaderListener listener) {
        Objects.requireNonNull(listener, "listener");
        long observer = client.withHandle(h -> nativeObserve(h, name));
        return LeaderSubscription.start(name, observer, listener);
    }

    @Override
    public String toString() {
        return "NativeLeaderElection[" + name + "]";
    }
}
