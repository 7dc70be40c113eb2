package io.polylock;

/**
 * Redisson's {@code RIdGenerator}: increasing IDs of one name, unique across every process sharing the backend, from
 * ranges reserved in the store (Leaf's segment layout: a {@code leaf_alloc} row on SQL and SQLite, a counter
 * elsewhere). A range is durable in the store before its first ID is handed out, so an ID never repeats, across
 * processes and crashes; a crash or a dropped generator leaves the rest of its range unused (a gap). IDs are never 0.
 * IDs increase within a range; ranges of one name taken by different generators interleave.
 */
public interface RIdGenerator {
    /** The generator's name (Leaf's {@code biz_tag}). */
    String getName();

    /**
     * Set how many IDs this generator reserves per round trip ({@code allocationSize}, Redisson's default 5000; polylock's
     * default without tryInit: ranges from 1000 growing with use, as Leaf's adaptive step).
     *
     * <p>Differences from Redisson, which keeps both settings in Redis:
     *
     * <ul>
     *   <li>{@code value}, the start value, cannot be honoured: polylock's counter (Leaf's {@code max_id}) is only ever
     *       advanced by whole ranges, and the store offers no "set if absent" that every backend could honour without
     *       a race. Only {@code 0} is accepted (the counter starts at 0, the first ID is 1); any other value is
     *       refused with {@link ErrorCode#UNSUPPORTED}. To start higher, set {@code max_id} in the store before first
     *       use.
     *   <li>The allocation size belongs to this generator object, not to the store: every process passes its own.
     *       The result is {@code true} if this call set it, {@code false} if this generator had already been
     *       initialised or had handed out IDs (its allocation size then stays).
     * </ul>
     */
    boolean tryInit(long value, long allocationSize);

    /**
     * The next ID. Waits for a range being loaded up to 5 s, then throws {@link ExhaustedException} (with when to retry).
     */
    long nextId();

    /** {@code count} IDs at once (all or nothing). */
    long[] nextIds(int count);
}
