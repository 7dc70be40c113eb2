package io.polylock;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The leader of an {@link RLeaderElection} as anyone reads it: the value it campaigned with or last proclaimed, and its
 * term, a fencing token greater than the term of every earlier leader of the election.
 */
public final class Leader {
    private final byte[] value;
    private final long term;

    /** Made by the native side; a null {@code value} means nobody leads (see {@link #orEmpty}). */
    Leader(byte[] value, long term) {
        this.value = value;
        this.term = term;
    }

    /** The native side's answer as Java says it: empty when nobody leads. */
    static java.util.Optional<Leader> orEmpty(Leader leader) {
        return leader == null || leader.value == null ? java.util.Optional.empty() : java.util.Optional.of(leader);
    }

    /** The leader's value (a copy is yours to keep). */
    public byte[] getValue() {
        return value.clone();
    }

    /** The value as UTF-8 text. */
    public String getValueAsString() {
        return new String(value, StandardCharsets.UTF_8);
    }

    /** The leader's term: compare terms to tell leaders apart, and pass it to a store as a fencing token. */
    public long getTerm() {
        return term;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Leader && ((Leader) other).term == term && Arrays.equals(((Leader) other).value, value);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(term) * 31 + Arrays.hashCode(value);
    }

    @Override
    public String toString() {
        return "Leader{term=" + term + ", value=" + getValueAsString() + "}";
    }
}
