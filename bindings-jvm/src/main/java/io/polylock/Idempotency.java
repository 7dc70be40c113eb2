package io.polylock;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Callable;

/**
 * Idempotency keys of one namespace ({@link PolylockClient#getIdempotency(String)}): "do this once" for a retried
 * request, a redelivered message, a job two workers picked. {@link #run} does it all; {@link #begin} is the step by step
 * form. Every attempt that takes a key gets a token that grows with each takeover, and a ticket whose attempt was taken
 * over can no longer complete ({@link ErrorCode#LOST}), so a slow first attempt never overwrites the result of the
 * attempt that replaced it. Backends without versioned values throw {@link ErrorCode#UNSUPPORTED}.
 *
 * <p>Outcomes and HTTP (the IETF idempotency-key draft): a replay answers as the first attempt did; {@link
 * InProgressException} is 409 Conflict; a {@link ErrorCode#MISMATCH} (the key was used with another payload) is 422.
 *
 * <p>The fingerprint identifies the payload: its bytes (text as UTF-8) are kept as they are up to 1024 bytes and
 * hashed (SHA-256) beyond, and {@link #fingerprintOfJson(String)} fingerprints a structured payload given as JSON
 * (canonical: key order and spacing do not matter), by the core's one codec, so services in every language sharing a
 * namespace agree on what is "the same payload".
 *
 * <p>Responses stored by {@link #run} are tagged by the same codec (bytes, or JSON text with {@link #runJson}), so a
 * Python or Node service can replay them. {@link IdempotencyTicket#complete} stores its bytes as they are, and {@link
 * Begin#getResponse()} hands back the stored bytes as they are (with the codec's tag when {@code run} stored them).
 */
public final class Idempotency {
    private static final long DEFAULT = -1;

    private final PolylockClient client;
    private final String namespace;
    private final long retentionMs;
    private final long inProgressTtlMs;

    Idempotency(PolylockClient client, String namespace, Duration retention, Duration inProgressTtl) {
        this.client = client;
        this.namespace = Objects.requireNonNull(namespace, "namespace");
        this.retentionMs = retention == null ? DEFAULT : retention.toMillis();
        this.inProgressTtlMs = inProgressTtl == null ? DEFAULT : inProgressTtl.toMillis();
    }

    private static native Begin nativeBegin(
            long client, String namespace, long retentionMs, long inProgressTtlMs, String key, byte[] fingerprint);

    private static native byte[] nativeRun(
            long client,
            String namespace,
            long retentionMs,
            long inProgressTtlMs,
            String key,
            byte[] fingerprint,
            long waitMs,
            boolean json,
            Callable<?> work);

    private static native byte[] nativeFingerprintOfJson(String json);

    /** The fingerprint of a structured payload given as JSON text: canonical JSON, hashed (the core's codec). */
    public static byte[] fingerprintOfJson(String json) {
        return nativeFingerprintOfJson(json);
    }

    public String getNamespace() {
        return namespace;
    }

    /** What {@link #begin} found. */
    public enum Outcome {
        /** This caller runs the work: {@link IdempotencyTicket#complete} (or abandon) the ticket. */
        ACQUIRED,
        /** An attempt finished before: {@link Begin#getResponse()} is its stored response. */
        REPLAY,
        /** Another attempt is under way; it may be taken over after {@link Begin#getRetryAfter()} (HTTP 409). */
        IN_PROGRESS,
        /** The key was used before with another fingerprint (HTTP 422). */
        MISMATCH
    }

    /** The answer of {@link #begin}: an outcome, and the ticket, the stored response or the retry-after it comes with. */
    public static final class Begin {
        private final Outcome outcome;
        private final long ticketHandle;
        private final long token;
        private final byte[] response;
        private final long retryAfterMs;
        private IdempotencyTicket ticket;

        private Begin(Outcome outcome, long ticketHandle, long token, byte[] response, long retryAfterMs) {
            this.outcome = outcome;
            this.ticketHandle = ticketHandle;
            this.token = token;
            this.response = response;
            this.retryAfterMs = retryAfterMs;
        }

        public Outcome getOutcome() {
            return outcome;
        }

        /** With {@link Outcome#ACQUIRED}: this attempt's ticket; else null. */
        public IdempotencyTicket getTicket() {
            return ticket;
        }

        /** With {@link Outcome#REPLAY}: the stored response; else null. */
        public byte[] getResponse() {
            return response == null ? null : response.clone();
        }

        /** With {@link Outcome#IN_PROGRESS}: when the attempt under way may be taken over; else null. */
        public Duration getRetryAfter() {
            return retryAfterMs < 0 ? null : Duration.ofMillis(retryAfterMs);
        }

        @Override
        public String toString() {
            return "Begin{" + outcome + (ticket != null ? ", token=" + token : "") + "}";
        }
    }

    /** Called by the native side with what the core's begin found (outcome as {@link Outcome} ordinal). */
    @SuppressWarnings("unused")
    private static Begin begun(int outcome, long ticketHandle, long token, byte[] response, long retryAfterMs) {
        return new Begin(Outcome.values()[outcome], ticketHandle, token, response, retryAfterMs);
    }

    /**
     * Claim {@code key} for one attempt, or find the response of the attempt that finished, or that another attempt is
     * under way, or that the key was used with another fingerprint.
     */
    public Begin begin(String key, byte[] fingerprint) {
        Begin begin = client.withHandle(h -> nativeBegin(h, namespace, retentionMs, inProgressTtlMs, key, fingerprint));
        if (begin.outcome == Outcome.ACQUIRED) {
            begin.ticket = new IdempotencyTicket(client, begin.ticketHandle, key, begin.token);
        }
        return begin;
    }

    /**
     * Run {@code work} once for {@code key}: on this thread, storing its response for every later call with the key (or
     * giving the key up if it throws, so a retry runs it again, and rethrowing what it threw), or return the stored
     * response of the attempt that finished. Throws {@link InProgressException} (with a retry-after) if another attempt
     * is under way, and {@link PolylockException} {@link ErrorCode#MISMATCH} if the key was used with another
     * fingerprint.
     */
    public byte[] run(String key, byte[] fingerprint, Callable<byte[]> work) throws Exception {
        return run(key, fingerprint, null, work);
    }

    /** As {@link #run(String, byte[], Callable)}, waiting up to {@code wait} for an attempt under way and replaying its response. */
    public byte[] run(String key, byte[] fingerprint, Duration wait, Callable<byte[]> work) throws Exception {
        long waitMs = wait == null ? DEFAULT : Math.max(0, wait.toMillis());
        // The work's own exception, checked or not, is rethrown by the native side as it is.
        return (byte[]) client.<Object>withHandle(
                h -> nativeRun(h, namespace, retentionMs, inProgressTtlMs, key, fingerprint, waitMs, false, work));
    }

    /**
     * As {@link #run(String, byte[], Callable)} for a work whose response is JSON text (encode and decode it with your
     * JSON library): stored as JSON by the core's codec, so another language's {@code run} replays it as a structured
     * value. A key whose response was stored as bytes is refused here ({@link ErrorCode#INVALID_ARGUMENT}), and the
     * other way round.
     */
    public String runJson(String key, byte[] fingerprint, Callable<String> work) throws Exception {
        return runJson(key, fingerprint, null, work);
    }

    /** As {@link #runJson(String, byte[], Callable)}, waiting up to {@code wait} for an attempt under way. */
    public String runJson(String key, byte[] fingerprint, Duration wait, Callable<String> work) throws Exception {
        long waitMs = wait == null ? DEFAULT : Math.max(0, wait.toMillis());
        return (String) client.<Object>withHandle(
                h -> nativeRun(h, namespace, retentionMs, inProgressTtlMs, key, fingerprint, waitMs, true, work));
    }

    @Override
    public String toString() {
        return "Idempotency{namespace=" + namespace + "}";
    }
}
