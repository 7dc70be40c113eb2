package io.polylock;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The status of one lock ({@link PolylockClient#status(String)}): the fields {@code polylock status --json} prints,
 * as far as the backend's layout tells (a field the layout cannot tell is null). Read from the core's one JSON shape
 * ({@code polylock::kit::inspect_json}), so every language reports the same facts.
 */
public final class LockStatus {
    private final Map<String, Object> map;
    private final String json;

    LockStatus(String json) {
        this.json = json;
        this.map = Collections.unmodifiableMap(object(Json.parse(json)));
    }

    /** The lock's name. */
    public String getName() {
        return (String) map.get("name");
    }

    /** The kind the status is of: {@code reentrant}, {@code fair}, {@code token} or {@code lease}. */
    public String getKind() {
        return (String) map.get("kind");
    }

    /** The backend's name ({@code redis}, {@code etcd}, ...). */
    public String getBackend() {
        return (String) map.get("backend");
    }

    /** Whether anyone holds the lock. */
    public boolean isHeld() {
        return Boolean.TRUE.equals(map.get("held"));
    }

    /** The holder as the store names it, or null when free or when the layout cannot tell. */
    public String getHolder() {
        return (String) map.get("holder");
    }

    /** The holder's fencing token, or null. */
    public Long getFencingToken() {
        return (Long) map.get("fencing_token");
    }

    /** The name's token counter (the last token issued), or null. */
    public Long getTokenCounter() {
        return (Long) map.get("token_counter");
    }

    /** Milliseconds left of the hold's lease, or null for no hold or a hold without expiry. */
    public Long getRemainingLeaseMillis() {
        return (Long) map.get("remaining_lease_ms");
    }

    /** Whether the hold has a lease that runs out (false for one the store keeps while its session lives). */
    public boolean isLeaseExpiring() {
        return Boolean.TRUE.equals(map.get("lease_expires"));
    }

    /** How many wait for the lock, or null where the backend cannot count them. */
    public Long getWaiters() {
        return (Long) map.get("waiters");
    }

    /** The layout the store keeps the lock in. */
    public String getLayout() {
        return (String) map.get("layout");
    }

    /** The layout's further facts, label to value, in display order. */
    public Map<String, String> getDetails() {
        Map<String, String> details = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : object(map.get("details")).entrySet()) {
            details.put(e.getKey(), String.valueOf(e.getValue()));
        }
        return Collections.unmodifiableMap(details);
    }

    /** Every field, in the JSON's order. */
    public Map<String, Object> asMap() {
        return map;
    }

    /** The JSON text, as {@code polylock status --json} prints it. */
    public String toJson() {
        return json;
    }

    @Override
    public String toString() {
        return json;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> object(Object value) {
        if (!(value instanceof Map)) {
            throw new PolylockException(ErrorCode.INTERNAL, "expected a JSON object from the native library, got " + value);
        }
        return (Map<String, Object>) value;
    }
}
