package io.polylock;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/** The JNI surface of libpolylock_jvm. Handles are opaque pointers owned by the Java objects that hold them. */
final class NativeBridge {
    static final int KIND_REENTRANT = 0;
    static final int KIND_FAIR = 1;
    static final int KIND_TOKEN = 2;
    static final int KIND_LEASE = 3;
    static final int KIND_READ = 4;
    static final int KIND_WRITE = 5;

    static final int QUERY_IS_LOCKED = 0;
    static final int QUERY_REMAINING = 1;
    static final int QUERY_FORCE_UNLOCK = 2;

    private static final int STATUS_VALUE = 0;
    private static final int STATUS_NOTHING = 1;

    static {
        NativeLoader.load();
        // Before any client exists: the core's records go to SLF4J from the first connect on.
        Logging.install();
    }

    private NativeBridge() {}

    static native long connect(String url);

    static native void close(long client);

    static native String clientId(long client);

    static native void checkLock(long client, String name, int kind);

    /**
     * Completes {@code future} with the fencing token; when the wait ran out, with null ({@code waiting} false: the
     * try form) or exceptionally with TIMEOUT ({@code waiting} true: the waiting form). Returns a call handle.
     */
    static native long acquire(long client, String name, int kind, long threadId, long waitMs, long leaseMs,
            boolean waiting, CompletableFuture<Long> future);

    static native void cancel(long call);

    static native void freeCall(long call);

    static native void release(long client, String name, int kind, long threadId, CompletableFuture<Long> future);

    static native void query(long client, String name, int kind, int query, CompletableFuture<Long> future);

    static native int holdCount(long client, String name, int kind, long threadId);

    static native long token(long client, String name, int kind, long threadId);

    /** Why the thread's current hold was lost, or null while it holds nothing or holds it still. */
    static native String lostReason(long client, String name, int kind, long threadId);

    /**
     * Completes {@code future} exceptionally with LOST (the message is the reason) when the thread's current hold is
     * lost, or with null once that hold is given back first (or the call is cancelled). Throws
     * IllegalMonitorStateException if the thread holds nothing. Returns a call handle, as {@link #acquire}.
     */
    static native long watchLost(long client, String name, int kind, long threadId, CompletableFuture<Long> future);

    /**
     * Completes {@code future} with {@code {permit id, fencing token}}; when the wait ran out, as {@link #acquire}.
     * Returns a call handle.
     */
    static native long semaphoreAcquire(long client, String name, int permits, long waitMs, long leaseMs,
            boolean waiting, CompletableFuture<long[]> future);

    static native void semaphoreRelease(long client, String name, int permits, long permitId, CompletableFuture<Long> future);

    /** The core's table of error kinds: names, in the order of their numbers (1, 2, ...). */
    static native String[] errorKinds();

    static native long snowflakeNew(long worker, long epochMs);

    static native long snowflakeNext(long generator);

    static native long[] snowflakeParse(long generator, long id);

    static native void snowflakeFree(long generator);

    /** The next UUIDv7 of this process, as {most, least} significant bits. */
    static native long[] uuid7Next();

    static native long uuid7TimestampMs(long most, long least);

    /** The next ULID of this process, as text. */
    static native String ulidNext();

    /** A ULID's 128 bits, as {most, least} significant bits. */
    static native long[] ulidParse(String ulid);

    static native String ulidFormat(long most, long least);

    /** Panics on purpose in native code (future null: at the entry point; else in a task): for the tests only. */
    static native void selfTestPanic(long client, CompletableFuture<Long> future);

    /** The level the environment asks for ({@code POLYLOCK_LOG}, {@code DEBUG=polylock}), null if it says nothing. */
    static native String logLevelFromEnv();

    /** Route the core's log records to {@link #log} at {@code level} (a level name) from now on. */
    static native void logRoute(String level);

    static native void logSetLevel(String level);

    static native String logLevel();

    /** The process's metrics (every client summed) as the one JSON shape. */
    static native String metricsJson();

    static native String clientMetricsJson(long client);

    static native String prometheusText();

    static native void setMetricsEnabled(boolean enabled);

    static native boolean metricsEnabled();

    /**
     * Called from whichever native thread logged (often a runtime worker) with one record: its level (1 error .. 5
     * trace), the Rust target, {@code LogRecord::line()} and the fields as key, value, key, value. Never throws: a
     * record whose logging fails is dropped.
     */
    @SuppressWarnings("unused")
    private static void log(int level, String loggerName, String line, String[] keysAndValues) {
        try {
            Logging.emit(level, loggerName, line, keysAndValues);
        } catch (Throwable dropped) {
            // A failing logger loses this record; it must not fail the operation that logged.
        }
    }

    /** Called from the native runtime's threads to complete a call's future. */
    @SuppressWarnings({"unchecked", "unused"})
    private static boolean completed(CompletableFuture<?> future, int status, long value, String message) {
        CompletableFuture<Long> target = (CompletableFuture<Long>) future;
        if (status == STATUS_VALUE) {
            return target.complete(value);
        }
        if (status == STATUS_NOTHING) {
            return target.complete(null);
        }
        return target.completeExceptionally(error((int) value, message));
    }

    /** Called from the native runtime's threads to complete a call's future with two numbers. */
    @SuppressWarnings({"unchecked", "unused"})
    private static boolean completedPair(CompletableFuture<?> future, long first, long second) {
        return ((CompletableFuture<long[]>) future).complete(new long[] {first, second});
    }

    /** Called from the native runtime's threads to complete a call's future with a value as it was read. */
    @SuppressWarnings({"unchecked", "unused"})
    private static boolean completedVersioned(CompletableFuture<?> future, byte[] value, long version, long token) {
        return ((CompletableFuture<Object>) future).complete(new Versioned(value, version, token));
    }

    /** The one mapping of native error codes to Java exceptions (also used for errors thrown synchronously). */
    static RuntimeException error(int code, String message) {
        return detailedError(code, message, DETAIL_NONE, null, 0);
    }

    /** What an error carries beyond its code (entry.rs's DETAIL_*, from the core's ErrorDetails). */
    private static final int DETAIL_NONE = 0;
    private static final int DETAIL_CONFLICT_NO_VALUE = 1;
    private static final int DETAIL_CONFLICT = 2;
    private static final int DETAIL_FENCED = 3;
    private static final int DETAIL_RETRY_AFTER = 4;

    /**
     * As {@link #error(int, String)}, with the details the core attached: the current value ({@code bytes}) and
     * version ({@code number}) of a conflict, the winning token of a fenced write, a retry-after in milliseconds.
     */
    static RuntimeException detailedError(int code, String message, int detail, byte[] bytes, long number) {
        ErrorCode errorCode = ErrorCode.fromNative(code);
        switch (errorCode) {
            case NOT_OWNER:
                return new IllegalMonitorStateException(message);
            case CONFLICT:
                return detail == DETAIL_CONFLICT
                        ? new ConflictException(message, bytes, number)
                        : new ConflictException(message, null, null);
            case FENCED:
                return new FencedException(message, detail == DETAIL_FENCED ? Long.valueOf(number) : null);
            case IN_PROGRESS:
                return new InProgressException(message, detail == DETAIL_RETRY_AFTER ? Duration.ofMillis(number) : null);
            case EXHAUSTED:
                return new ExhaustedException(message, detail == DETAIL_RETRY_AFTER ? Duration.ofMillis(number) : null);
            default:
                return new PolylockException(errorCode, message);
        }
    }
}
