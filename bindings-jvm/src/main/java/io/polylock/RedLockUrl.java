package io.polylock;

import java.util.List;
import java.util.Objects;

/** The {@code redlock://} URL of a list of Redis servers, from the core's one builder (polylock::kit::redlock_url). */
final class RedLockUrl {
    static {
        try {
            Class.forName("io.polylock.NativeBridge"); // loads the native library once
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException(e);
        }
    }

    private RedLockUrl() {}

    private static native String nativeRedlockUrl(String[] servers);

    static String of(List<String> servers) {
        Objects.requireNonNull(servers, "servers");
        return nativeRedlockUrl(servers.toArray(new String[0]));
    }
}
