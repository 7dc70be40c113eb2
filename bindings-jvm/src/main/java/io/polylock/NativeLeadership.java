package io.polylock;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * {@link RLeadership} over the core's leadership, boxed on the native side and freed by a Cleaner: a leadership that
 * becomes unreachable without {@link #resign()} is resigned in the background, as the core does with one dropped.
 */
final class NativeLeadership implements RLeadership {
    private static final Cleaner CLEANER = Cleaner.create();

    private final PolylockClient client;
    private final String name;
    private final long leadership;
    private final CompletableFuture<String> lost;

    NativeLeadership(PolylockClient client, String name, long leadership) {
        this.client = client;
        this.name = name;
        this.leadership = leadership;
        CLEANER.register(this, () -> NativeLeaderElection.nativeFreeLeadership(leadership));
        CompletableFuture<String> lostFuture = new CompletableFuture<>();
        this.lost = lostFuture;
        CompletableFuture<Long> watch = new CompletableFuture<>();
        // The watch completes exceptionally with the loss (LOST, or CONNECTION when the client closed first), or
        // with null once resigned unlost: then `lost` stays incomplete. The native side holds `watch`, so nothing
        // reachable from it may refer to this object (the Cleaner would never run).
        watch.whenComplete((nothing, error) -> {
            if (error != null) {
                lostFuture.complete(error.getMessage());
            }
        });
        try {
            client.withHandle(h -> {
                NativeLeaderElection.nativeWatchLost(h, leadership, watch);
                return null;
            });
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public String getName() {
        return name;
    }

    private long state(int which) {
        try {
            return NativeLeaderElection.nativeState(leadership, which);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public long getTerm() {
        return state(NativeLeaderElection.STATE_TERM);
    }

    @Override
    public byte[] getValue() {
        try {
            return NativeLeaderElection.nativeValue(leadership);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public boolean isLeader() {
        return state(NativeLeaderElection.STATE_LEADING) == 1;
    }

    @Override
    public boolean isLost() {
        return state(NativeLeaderElection.STATE_LOST) == 1;
    }

    @Override
    public boolean isSuspended() {
        return state(NativeLeaderElection.STATE_SUSPENDED) == 1;
    }

    @Override
    public String getLostReason() {
        try {
            return NativeLeaderElection.nativeLostReason(leadership);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public CompletableFuture<String> onLost() {
        return lost;
    }

    @Override
    public void proclaim(byte[] value) {
        Objects.requireNonNull(value, "value");
        try {
            client.withHandle(h -> {
                NativeLeaderElection.nativeProclaim(h, leadership, value);
                return null;
            });
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public void proclaim(String value) {
        proclaim(Objects.requireNonNull(value, "value").getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void resign() {
        try {
            client.withHandle(h -> {
                NativeLeaderElection.nativeResign(h, leadership);
                return null;
            });
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public void close() {
        try {
            resign();
        } catch (PolylockException e) {
            if (e.getCode() != ErrorCode.LOST) {
                throw e;
            }
        }
    }

    @Override
    public String toString() {
        return "NativeLeadership[" + name + ", term " + getTerm() + (isLeader() ? ", leading]" : ", not leading]");
    }
}
