package io.polylock;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;

/**
 * One attempt's claim on an idempotency key ({@link Idempotency#begin}): {@link #complete} it with the response to
 * replay, or {@link #abandon} it so a retry runs again; {@link #extend} it while the work runs longer than the
 * namespace's in-progress TTL. Each of them throws {@link ErrorCode#LOST} if another attempt took the key over.
 */
public final class IdempotencyTicket {
    private static final Cleaner CLEANER = Cleaner.create();
    private static final int COMPLETE = 0;
    private static final int ABANDON = 1;
    private static final int EXTEND = 2;

    private final PolylockClient client;
    private final long ticket;
    private final String key;
    private final long token;

    IdempotencyTicket(PolylockClient client, long ticket, String key, long token) {
        this.client = client;
        this.ticket = ticket;
        this.key = key;
        this.token = token;
        CLEANER.register(this, () -> nativeFree(ticket));
    }

    private static native void nativeCall(long client, long ticket, int op, byte[] response);

    private static native void nativeFree(long ticket);

    public String getKey() {
        return key;
    }

    /** Grows with every attempt that takes the key: usable as a fencing token for the work's own writes ({@link VersionedValue#writeFenced}). */
    public long getToken() {
        return token;
    }

    /** Store {@code response} for every later begin of this key to replay (until the retention ends). */
    public void complete(byte[] response) {
        call(COMPLETE, response);
    }

    /** Give the key up (the work failed and may be retried): the next begin runs again. */
    public void abandon() {
        call(ABANDON, null);
    }

    /** Keep the key for another in-progress TTL from now. */
    public void extend() {
        call(EXTEND, null);
    }

    private void call(int op, byte[] response) {
        try {
            client.withHandle(h -> {
                nativeCall(h, ticket, op, response);
                return null;
            });
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public String toString() {
        return "IdempotencyTicket{key=" + key + ", token=" + token + "}";
    }
}
