package io.polylock;

import java.util.Map;
import java.util.Objects;

/** One lock of {@link PolylockClient#list(String)}: its name, kind and whether it is held. */
public final class LockEntry {
    private final String name;
    private final String kind;
    private final boolean held;

    LockEntry(Map<String, Object> fields) {
        this.name = (String) fields.get("name");
        this.kind = (String) fields.get("kind");
        this.held = Boolean.TRUE.equals(fields.get("held"));
    }

    public String getName() {
        return name;
    }

    /** {@code reentrant}, {@code fair}, {@code token}, {@code lease}, {@code read} or {@code write}. */
    public String getKind() {
        return kind;
    }

    public boolean isHeld() {
        return held;
    }

    @Override
    public boolean equals(Object other) {
        if (!(other instanceof LockEntry)) {
            return false;
        }
        LockEntry entry = (LockEntry) other;
        return held == entry.held && name.equals(entry.name) && kind.equals(entry.kind);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, kind, held);
    }

    @Override
    public String toString() {
        return "LockEntry{name=" + name + ", kind=" + kind + ", held=" + held + "}";
    }
}
